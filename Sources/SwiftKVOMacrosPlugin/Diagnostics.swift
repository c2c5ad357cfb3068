#if Macros
import SwiftDiagnostics

/// Every error the macros report: each says what is wrong and what to write instead.
enum KVOMacroDiagnostic: DiagnosticMessage {
    case notAClass(kind: String, name: String)
    case lazyProperty(String)
    case multipleBindings
    case notAnIdentifier
    case registrarShape
    case isolatedRegistrar
    case dependentKeyPathsWrittenByHand
    case dependsOnNotAProperty
    case dependsOnStatic(String)
    case dependsOnStored(String)
    case dependsOnNoSources(String)
    case dependsOnNotAKeyPath
    case dependsOnChain(String)
    case dependsOnForeignRoot(keyPath: String, className: String)
    case reappliedOnSubclass(className: String, superclass: String)
    case localClass(String)

    var message: String {
        switch self {
        case .notAClass(let kind, let name):
            let why =
                switch kind {
                case "actor": "an actor's properties are isolated, while observers are called synchronously on the thread that makes a change"
                case "protocol": "apply it to each conforming class instead"
                default: "observation needs one object's identity, and a value of \(kind == "enum" ? "an enum" : "a struct") is copied"
                }
            return "'@KeyValueObservable' applies to classes only; '\(name)' is \(kind == "enum" || kind == "actor" ? "an" : "a") \(kind): \(why)"
        case .lazyProperty(let name):
            return "'lazy var \(name)' cannot be observed: its first read stores the value without notifying; mark it '@KVOIgnored', or make it a plain 'var' with an initial value"
        case .multipleBindings:
            return "'@KeyValueObservable' observes one property per declaration; declare each 'var' on its own line, or mark this one '@KVOIgnored'"
        case .notAnIdentifier:
            return "'@KeyValueObservable' cannot observe a tuple pattern; declare each property on its own, or mark this one '@KVOIgnored'"
        case .registrarShape:
            return "'kvoRegistrar' is the registrar '@KeyValueObservable' declares; write it as 'let kvoRegistrar = KVORegistrar()', or remove it and let the macro declare it"
        case .isolatedRegistrar:
            return "'kvoRegistrar' of a '@MainActor' class is read from any thread; write it as 'nonisolated let kvoRegistrar = KVORegistrar()', or remove it and let the macro declare it"
        case .dependentKeyPathsWrittenByHand:
            return "'dependentKeyPaths' is written by hand and '@DependsOn' is used too; declare dependencies in one place: remove this declaration, or the '@DependsOn' attributes"
        case .dependsOnNotAProperty:
            return "'@DependsOn' applies to a computed instance property declared with '@KeyValueObservable' ('@DependsOn(\\.name) var summary: String { … }')"
        case .dependsOnStatic(let name):
            return "'@DependsOn' applies to instance properties; '\(name)' is static"
        case .dependsOnStored(let name):
            return "'@DependsOn' declares what a computed property is computed from; '\(name)' is stored and is observed by itself: remove '@DependsOn'"
        case .dependsOnNoSources(let name):
            return "'@DependsOn' needs the key paths '\(name)' is computed from, e.g. '@DependsOn(\\.firstName, \\.lastName)'"
        case .dependsOnNotAKeyPath:
            return "'@DependsOn' takes key path literals such as '\\.name'"
        case .dependsOnChain(let keyPath):
            return "'@DependsOn' sources are properties of this class or its other dependent keys; '\(keyPath)' reaches through another object, which a dependent key does not follow: depend on its first property, or observe the chain itself"
        case .dependsOnForeignRoot(let keyPath, let className):
            return "'@DependsOn' sources are properties of '\(className)'; '\(keyPath)' is rooted elsewhere: write it '\\.name'"
        case .localClass(let name):
            return "'@KeyValueObservable' cannot declare the local class '\(name)' observable: its conformance is an extension, which a function cannot contain; declare '\(name)' outside the function"
        case .reappliedOnSubclass(let className, let superclass):
            return "'\(className)' inherits 'KeyValueObservable' from '\(superclass)': remove '@KeyValueObservable'; a subclass inherits it, and declares its own properties with '@Observed', '@ObservedArray' or '@ObservedSet' and its keys by overriding 'observableKeyPaths'"
        }
    }

    var diagnosticID: MessageID {
        let id =
            switch self {
            case .notAClass: "notAClass"
            case .lazyProperty: "lazyProperty"
            case .multipleBindings: "multipleBindings"
            case .notAnIdentifier: "notAnIdentifier"
            case .registrarShape: "registrarShape"
            case .isolatedRegistrar: "isolatedRegistrar"
            case .dependentKeyPathsWrittenByHand: "dependentKeyPathsWrittenByHand"
            case .dependsOnNotAProperty: "dependsOnNotAProperty"
            case .dependsOnStatic: "dependsOnStatic"
            case .dependsOnStored: "dependsOnStored"
            case .dependsOnNoSources: "dependsOnNoSources"
            case .dependsOnNotAKeyPath: "dependsOnNotAKeyPath"
            case .dependsOnChain: "dependsOnChain"
            case .dependsOnForeignRoot: "dependsOnForeignRoot"
            case .reappliedOnSubclass: "reappliedOnSubclass"
            case .localClass: "localClass"
            }
        return MessageID(domain: "SwiftKVOMacros", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}

/// The fix-its offered with those errors.
enum KVOMacroFixIt: FixItMessage {
    case addKVOIgnored
    case removeDependsOn
    case declareRegistrar
    case declareNonisolatedRegistrar
    case addNonisolated
    case removeKeyValueObservable

    var message: String {
        switch self {
        case .addKVOIgnored: "Insert '@KVOIgnored '"
        case .removeDependsOn: "Remove '@DependsOn'"
        case .declareRegistrar: "Replace with 'let kvoRegistrar = KVORegistrar()'"
        case .declareNonisolatedRegistrar: "Replace with 'nonisolated let kvoRegistrar = KVORegistrar()'"
        case .addNonisolated: "Insert 'nonisolated '"
        case .removeKeyValueObservable: "Remove '@KeyValueObservable'"
        }
    }

    var fixItID: MessageID {
        switch self {
        case .addKVOIgnored: MessageID(domain: "SwiftKVOMacros", id: "addKVOIgnored")
        case .removeDependsOn: MessageID(domain: "SwiftKVOMacros", id: "removeDependsOn")
        case .declareRegistrar: MessageID(domain: "SwiftKVOMacros", id: "declareRegistrar")
        case .declareNonisolatedRegistrar: MessageID(domain: "SwiftKVOMacros", id: "declareNonisolatedRegistrar")
        case .addNonisolated: MessageID(domain: "SwiftKVOMacros", id: "addNonisolated")
        case .removeKeyValueObservable: MessageID(domain: "SwiftKVOMacros", id: "removeKeyValueObservable")
        }
    }
}
#endif

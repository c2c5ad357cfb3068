#if Macros
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@KeyValueObservable` on a class writes what a careful user writes by hand:
///
/// - extension role: `extension Account: KeyValueObservable {}`;
/// - member role: `let kvoRegistrar = KVORegistrar()` (unless declared so already),
///   `static var dependentKeyPaths` from the `@DependsOn` attributes (only when there is one),
///   and `static var observableKeyPaths`, the table of keys by name (`class var` for both in a
///   class that is not `final`, so a subclass can override them);
/// - member-attribute role: `@Observed` on each stored instance `var`, `@ObservedArray` where
///   the written type is `[T]` or `Array<T>`.
///
/// The decisions for each kind of member are `ObservableMember`'s. Errors are reported once
/// each: the kind of declaration and the registrar's shape by the member role, each property
/// by the member-attribute role, `@DependsOn` misuse by `@DependsOn` itself.
public struct KeyValueObservableMacro {}

extension KeyValueObservableMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let theClass = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: notAClass(declaration)))
            return []
        }
        if context.isInsideAFunction {
            context.diagnose(Diagnostic(node: node, message: KVOMacroDiagnostic.localClass(theClass.name.text)))
            return []
        }
        if let superclass = theClass.inheritedObservableSuperclass(conformingTo: protocols) {
            context.diagnose(
                Diagnostic(
                    node: node,
                    message: KVOMacroDiagnostic.reappliedOnSubclass(
                        className: theClass.name.text, superclass: superclass),
                    fixIt: FixIt(
                        message: KVOMacroFixIt.removeKeyValueObservable, changes: theClass.removing(attribute: node))))
            return []
        }
        let className = theClass.name.text
        let access = theClass.memberAccess
        // A main-actor class's generated members are nonisolated, as the conformance needs, and
        // its tables are formed in the actor's isolation, where a key path to its properties is.
        let isMainActor = theClass.attributes.contains {
            if case .attribute(let attribute) = $0 { return attribute.attributeName.trimmedDescription == "MainActor" }
            return false
        }
        let nonisolated = isMainActor ? "nonisolated " : ""
        // An open class's tables are `open`, so a subclass in another module can override them.
        let tableAccess = theClass.isOpen && !theClass.isFinal ? "open " : access
        let tableKeyword = theClass.isFinal ? "static" : "class"
        let variables = theClass.memberBlock.members.compactMap { $0.decl.as(VariableDeclSyntax.self) }
        let aliases = theClass.memberBlock.typealiases
        let members = theClass.memberBlock.members.flatMap { $0.decl.declarations }.map {
            ObservableMember($0, aliases: aliases)
        }
        let items = theClass.memberBlock.members.tableItems(aliases: aliases)
        var generated: [DeclSyntax] = []

        // Reported here, once for the declaration, rather than by the member-attribute role,
        // which the compiler runs once for each property a declaration declares.
        for member in theClass.memberBlock.members.flatMap({ $0.decl.declarations }) {
            if case .unsupportedPattern(let message) = ObservableMember(member, aliases: aliases) {
                context.diagnose(Diagnostic(node: member, message: message))
            }
        }

        if let registrar = variables.first(where: { $0.declares("kvoRegistrar") }) {
            if !registrar.isRegistrarShaped {
                let replacement: DeclSyntax = "\(raw: access)\(raw: nonisolated)let kvoRegistrar = KVORegistrar()"
                context.diagnose(
                    Diagnostic(
                        node: registrar, message: KVOMacroDiagnostic.registrarShape,
                        fixIt: FixIt(
                            message: isMainActor ? KVOMacroFixIt.declareNonisolatedRegistrar : KVOMacroFixIt.declareRegistrar,
                            changes: [
                                .replace(
                                    oldNode: Syntax(registrar),
                                    newNode: Syntax(replacement.with(\.leadingTrivia, registrar.leadingTrivia)))
                            ])))
            } else if isMainActor && !registrar.isNonisolated {
                // Shaped (perhaps set in `init`): only the modifier is missing.
                var marked = registrar
                var modifier = DeclModifierSyntax(name: .keyword(.nonisolated), trailingTrivia: .space)
                if registrar.modifiers.isEmpty && registrar.attributes.isEmpty {
                    // The indentation moves to the modifier, which now starts the declaration.
                    modifier.leadingTrivia = registrar.bindingSpecifier.leadingTrivia
                    marked.bindingSpecifier.leadingTrivia = []
                }
                marked.modifiers = registrar.modifiers + [modifier]
                context.diagnose(
                    Diagnostic(
                        node: registrar, message: KVOMacroDiagnostic.isolatedRegistrar,
                        fixIt: FixIt(
                            message: KVOMacroFixIt.addNonisolated,
                            changes: [.replace(oldNode: Syntax(registrar), newNode: Syntax(marked))])))
            }
        } else {
            generated.append("\(raw: access)\(raw: nonisolated)let kvoRegistrar = KVORegistrar()")
        }

        let dependents = members.compactMap { member -> (String, [KeyPathExprSyntax])? in
            if case .dependent(let name, let sources) = member { return (name, sources) }
            return nil
        }
        var foreignRoot = false
        for (_, sources) in dependents {
            for source in sources {
                if let root = source.root?.trimmedDescription, root != className, root != "Self" {
                    foreignRoot = true
                    context.diagnose(
                        Diagnostic(
                            node: source,
                            message: KVOMacroDiagnostic.dependsOnForeignRoot(
                                keyPath: source.trimmedDescription, className: className)))
                }
            }
        }
        // Deprecated members are named in tables of their own, in a nested type whose members are
        // deprecated too, read through a protocol requirement: naming them there does not warn.
        // A dependent key is listed there when it or one of its sources is deprecated.
        let deprecatedNames = Set(
            theClass.memberBlock.members.flatMap { $0.decl.declarations }.compactMap { decl -> String? in
                guard let variable = decl.as(VariableDeclSyntax.self), variable.isDeprecated else { return nil }
                return variable.bindings.first?.identifier
            })
        var deprecatedTables: [DeclSyntax] = []
        let mainActorNames = Set(
            theClass.memberBlock.members.flatMap { $0.decl.declarations }.compactMap { decl -> String? in
                guard let variable = decl.as(VariableDeclSyntax.self), variable.attribute("MainActor") != nil
                else { return nil }
                return variable.bindings.first?.identifier
            })

        if !dependents.isEmpty, !foreignRoot {  // (after that error, a table would only add more)
            if let written = variables.first(where: { $0.declares("dependentKeyPaths") }) {
                context.diagnose(Diagnostic(node: written, message: KVOMacroDiagnostic.dependentKeyPathsWrittenByHand))
            } else {
                let entries = items.compactMap {
                    $0.compactMap { member, isDeprecated, isIsolated -> TableEntry? in
                        guard case .dependent(let name, let sources) = member else { return nil }
                        let namesDeprecated = sources.contains {
                            $0.components.first.map { deprecatedNames.contains($0.component.trimmedDescription) } ?? false
                        }
                        let namesIsolated = sources.contains {
                            $0.components.first.map { mainActorNames.contains($0.component.trimmedDescription) } ?? false
                        }
                        return TableEntry(
                            key: "\\\(className).\(name)",
                            value: "[\(sources.map { rooted($0, in: className) }.joined(separator: ", "))]",
                            isDeprecated: isDeprecated || namesDeprecated, isMainActor: isIsolated || namesIsolated)
                    }
                }
                let (body, deprecatedDeclaration) = tables(
                    entries, name: "dependentKeyPaths", type: "[AnyKeyPath: [AnyKeyPath]]", className: className,
                    isMainActor: isMainActor)
                generated.append(
                    """
                    \(raw: tableAccess)\(raw: nonisolated)\(raw: tableKeyword) var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        \(raw: body)
                    }
                    """)
                deprecatedTables += deprecatedDeclaration.map { [$0] } ?? []
            }
        }

        if !variables.contains(where: { $0.declares("observableKeyPaths") }) {
            // Keyed by the plain name: `default` for a property declared `` `default` ``.
            let entries = items.compactMap {
                $0.compactMap { member, isDeprecated, isIsolated in
                    member.tableName.map { name in
                        TableEntry(
                            key: "\"\(name.filter { $0 != "`" })\"", value: "\\\(className).\(name)",
                            isDeprecated: isDeprecated, isMainActor: isIsolated)
                    }
                }
            }
            let (body, deprecatedDeclaration) = tables(
                entries, name: "observableKeyPaths", type: "[String: AnyKeyPath]", className: className,
                isMainActor: isMainActor)
            generated.append(
                """
                \(raw: tableAccess)\(raw: nonisolated)\(raw: tableKeyword) var observableKeyPaths: [String: AnyKeyPath] {
                    \(raw: body)
                }
                """)
            deprecatedTables += deprecatedDeclaration.map { [$0] } ?? []
        }

        if !deprecatedTables.isEmpty {
            let declarations = deprecatedTables.map {
                "    " + $0.description.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n    ")
            }
            generated.append(
                """
                private enum \(raw: deprecatedTable): _KVODeprecatedKeyPaths {
                \(raw: declarations.joined(separator: "\n\n"))
                }
                """)
        }
        return generated
    }

    /// One entry of a generated table.
    struct TableEntry {
        let key: String
        let value: String
        /// Named in the nested table of deprecated members.
        let isDeprecated: Bool
        /// Isolated to the main actor: formed there (``isolatedTable(_:type:)``).
        let isMainActor: Bool
    }

    /// A table's getter body for the current entries, and the deprecated table's declaration
    /// (for the nested type) when some entries are deprecated. In a main-actor class
    /// (`isMainActor`) the whole table is formed in the actor's isolation; elsewhere the entries of
    /// main-actor properties are, and merged in.
    static func tables(
        _ entries: [TableItem<TableEntry>], name: String, type: String, className: String, isMainActor: Bool
    ) -> (body: String, deprecated: DeclSyntax?) {
        let current = entries.compactMap {
            $0.compactMap { $0.isDeprecated || ($0.isMainActor && !isMainActor) ? nil : ($0.key, $0.value) }
        }
        let isolated = entries.compactMap {
            $0.compactMap { !$0.isDeprecated && $0.isMainActor && !isMainActor ? ($0.key, $0.value) : nil }
        }
        let deprecated = entries.compactMap {
            $0.compactMap { $0.isDeprecated ? ($0.key, $0.value) : nil }
        }
        let deprecatedIsIsolated =
            isMainActor || entries.contains { $0.compactMap { $0.isDeprecated && $0.isMainActor ? true : nil } != nil }
        var merging: [String] = []
        if isolated.contains(where: { $0.hasEntries }) {
            merging.append(isolatedTable(tableBody(isolated, type: type), type: type))
        }
        guard deprecated.contains(where: { $0.hasEntries }) else {
            let body = tableBody(current, type: type, merging: merging)
            return (isMainActor ? isolatedTable(body, type: type) : body, nil)
        }
        let reader =
            name == "observableKeyPaths" ? "_kvoKeyPathsOfDeprecatedMembers" : "_kvoDependentKeyPathsOfDeprecatedMembers"
        let body = tableBody(current, type: type, merging: merging + ["\(reader)(\(deprecatedTable).self)"])
        let message = "the deprecated members of '\(className)', named where that does not warn"
        // The nested type is not isolated with the class: it forms main-actor key paths through it.
        let deprecatedBody = tableBody(deprecated, type: type)
        let table: DeclSyntax = """
            @available(*, deprecated, message: "\(raw: message)")
            static var \(raw: name): \(raw: type) {
                \(raw: deprecatedIsIsolated ? isolatedTable(deprecatedBody, type: type, owner: className) : deprecatedBody)
            }
            """
        return (isMainActor ? isolatedTable(body, type: type) : body, table)
    }

    /// The nested type that lists the class's deprecated members.
    static let deprecatedTable = "_KVODeprecatedMembers"

    /// `body`, a table's getter, formed in the main actor's isolation and read from any thread
    /// (through `owner`, the class, from a type that is not one).
    static func isolatedTable(_ body: String, type: String, owner: String? = nil) -> String {
        let reader =
            (owner.map { "\($0)." } ?? "")
            + (type == "[String: AnyKeyPath]" ? "unsafeIsolatedKeyPaths" : "unsafeIsolatedDependentKeyPaths")
        let indented = body.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n    ")
        return "\(reader) { @MainActor () -> \(type) in\n        \(indented)\n    }"
    }

    /// A table's getter: a dictionary literal, or, when members are declared under `#if` or
    /// another table is merged in (`merging`), the literal of the others completed under the same
    /// `#if`.
    static func tableBody(_ items: [TableItem<(String, String)>], type: String, merging: [String] = []) -> String {
        var plain: [String] = []
        var conditional: [String] = []
        func lines(_ items: [TableItem<(String, String)>], topLevel: Bool) {
            for item in items {
                switch item {
                case .entry(let (key, value)):
                    if topLevel {
                        plain.append("\(key): \(value)")
                    } else {
                        conditional.append("table[\(key)] = \(value)")
                    }
                case .conditional(let clauses):
                    guard clauses.contains(where: { $0.items.contains { $0.hasEntries } }) else { continue }
                    for clause in clauses {
                        conditional.append(clause.condition)
                        lines(clause.items, topLevel: false)
                    }
                    conditional.append("#endif")
                }
            }
        }
        lines(items, topLevel: true)
        for table in merging { conditional.append("table.merge(\(table)) { current, _ in current }") }
        if conditional.isEmpty { return dictionaryLiteral(plain) }
        return (["var table: \(type) = \(dictionaryLiteral(plain))"] + conditional + ["return table"])
            .joined(separator: "\n    ")
    }

    /// `\.name` and `\Self.name` rooted in the class (`\Account.name`: the declaring class, also
    /// in a subclass's table).
    static func rooted(_ keyPath: KeyPathExprSyntax, in className: String) -> String {
        "\\\(className)\(keyPath.components.trimmedDescription)"
    }

    /// A dictionary literal as a user writes it: one entry per line (`[:]` when empty).
    static func dictionaryLiteral(_ entries: [String]) -> String {
        if entries.isEmpty { return "[:]" }
        return "[\n" + entries.map { "        \($0),\n" }.joined() + "    ]"
    }

    static func notAClass(_ declaration: some DeclGroupSyntax) -> KVOMacroDiagnostic {
        if let value = declaration.as(StructDeclSyntax.self) {
            return .notAClass(kind: "struct", name: value.name.text)
        }
        if let value = declaration.as(EnumDeclSyntax.self) { return .notAClass(kind: "enum", name: value.name.text) }
        if let value = declaration.as(ActorDeclSyntax.self) { return .notAClass(kind: "actor", name: value.name.text) }
        if let value = declaration.as(ProtocolDeclSyntax.self) {
            return .notAClass(kind: "protocol", name: value.name.text)
        }
        if let value = declaration.as(ExtensionDeclSyntax.self) {
            return .notAClass(kind: "extension", name: value.extendedType.trimmedDescription)
        }
        return .notAClass(kind: "declaration", name: "")
    }
}

extension KeyValueObservableMacro: MemberAttributeMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard let theClass = declaration.as(ClassDeclSyntax.self), !context.isInsideAFunction else { return [] }
        switch ObservableMember(member, aliases: theClass.memberBlock.typealiases) {
        case .observe(_, let wrapper):
            return ["@\(raw: wrapper)"]
        case .lazy(let name, let modifier):
            if let variable = member.as(VariableDeclSyntax.self) {
                context.diagnose(
                    Diagnostic(
                        node: modifier, message: KVOMacroDiagnostic.lazyProperty(name),
                        fixIt: FixIt(
                            message: KVOMacroFixIt.addKVOIgnored,
                            changes: [
                                .replace(
                                    oldNode: Syntax(variable),
                                    newNode: Syntax(variable.adding(attribute: "KVOIgnored")))
                            ])))
            }
            return []
        case .observedByHand, .dependent, .leftAlone, .unsupportedPattern:  // (the member role reports a pattern)
            return []
        }
    }
}

extension KeyValueObservableMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        // Nothing for what is not a class (the member role reports it), nor for a class that
        // conforms already (the compiler then passes no protocol).
        // Nor inside a function, where an extension cannot be declared (the member role reports it).
        guard declaration.is(ClassDeclSyntax.self), !protocols.isEmpty, !context.isInsideAFunction else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): KeyValueObservable {}")]
    }
}

extension MacroExpansionContext {
    /// Whether the class is declared inside a function, closure or accessor (a local class).
    var isInsideAFunction: Bool {
        lexicalContext.contains { context in
            !(context.is(ClassDeclSyntax.self) || context.is(StructDeclSyntax.self) || context.is(EnumDeclSyntax.self)
                || context.is(ActorDeclSyntax.self) || context.is(ExtensionDeclSyntax.self)
                || context.is(ProtocolDeclSyntax.self))
        }
    }
}

extension ClassDeclSyntax {
    var isFinal: Bool { modifiers.contains { $0.name.tokenKind == .keyword(.final) } }
    var isOpen: Bool { modifiers.contains { $0.name.tokenKind == .keyword(.open) } }

    /// The superclass named first in the inheritance clause, when the compiler says the class
    /// conforms to `KeyValueObservable` already (it passes no protocol) and the class does not
    /// name the protocol itself: the macro was applied again on a subclass.
    func inheritedObservableSuperclass(conformingTo protocols: [TypeSyntax]) -> String? {
        guard protocols.isEmpty, let inherited = inheritanceClause?.inheritedTypes, let first = inherited.first
        else { return nil }
        // The protocol itself, or SwiftKVO's protocols that refine it, named by the class: it
        // conforms through them, not through a superclass. (A protocol of the user's own that
        // refines it cannot be told from a superclass by syntax: it is taken for one when named first.)
        let conformances: Set<String> = ["KeyValueObservable", "ObservationBridged"]
        let modules: Set<String> = ["SwiftKVO", "SwiftKVOMacros"]
        if inherited.contains(where: { inheritedType in
            if let member = inheritedType.type.as(MemberTypeSyntax.self) {
                return modules.contains(member.baseType.trimmedDescription) && conformances.contains(member.name.text)
            }
            return conformances.contains(inheritedType.type.trimmedDescription)
        }) {
            return nil
        }
        return first.type.trimmedDescription
    }

    /// The changes that remove `attribute` (for a fix-it); the declaration's first token keeps the
    /// attribute's indentation when no other attribute is left.
    func removing(attribute: AttributeSyntax) -> [FixIt.Change] {
        let kept = attributes.filter { element in
            if case .attribute(let other) = element { return other.trimmedDescription != attribute.trimmedDescription }
            return true
        }
        var changes: [FixIt.Change] = [.replace(oldNode: Syntax(attributes), newNode: Syntax(kept))]
        if kept.isEmpty,
            let next = attributes.lastToken(viewMode: .sourceAccurate)?.nextToken(viewMode: .sourceAccurate)
        {
            changes.append(.replaceLeadingTrivia(token: next, newTrivia: attributes.leadingTrivia))
        }
        return changes
    }

    /// The access the generated members need to witness the protocol: as the class's own.
    var memberAccess: String {
        for modifier in modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }
}

extension VariableDeclSyntax {
    /// Whether this declares a property named `name` (of an instance or of the type).
    func declares(_ name: String) -> Bool { bindings.contains { $0.identifier == name } }

    /// Whether it is declared `nonisolated`.
    var isNonisolated: Bool { modifiers.contains { $0.name.tokenKind == .keyword(.nonisolated) } }

    /// `let kvoRegistrar = KVORegistrar()`, or `let kvoRegistrar: KVORegistrar` set in `init`.
    var isRegistrarShaped: Bool {
        guard bindingSpecifier.tokenKind == .keyword(.let), !isStatic, bindings.count == 1,
            let binding = bindings.first, binding.accessorBlock == nil
        else { return false }
        let registrarTypes: Set<String> = ["KVORegistrar", "SwiftKVO.KVORegistrar"]
        if let type = binding.typeAnnotation?.type.trimmedDescription { return registrarTypes.contains(type) }
        guard let call = binding.initializer?.value.as(FunctionCallExprSyntax.self) else { return false }
        return registrarTypes.contains(call.calledExpression.trimmedDescription) && call.arguments.isEmpty
    }
}
#endif

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
        let className = theClass.name.text
        let access = theClass.memberAccess
        let tableKeyword = theClass.isFinal ? "static" : "class"
        let variables = theClass.memberBlock.members.compactMap { $0.decl.as(VariableDeclSyntax.self) }
        let members = theClass.memberBlock.members.map { ObservableMember($0.decl) }
        var generated: [DeclSyntax] = []

        if let registrar = variables.first(where: { $0.declares("kvoRegistrar") }) {
            if !registrar.isRegistrarShaped {
                let replacement: DeclSyntax = "\(raw: access)let kvoRegistrar = KVORegistrar()"
                context.diagnose(
                    Diagnostic(
                        node: registrar, message: KVOMacroDiagnostic.registrarShape,
                        fixIt: FixIt(
                            message: KVOMacroFixIt.declareRegistrar,
                            changes: [
                                .replace(
                                    oldNode: Syntax(registrar),
                                    newNode: Syntax(replacement.with(\.leadingTrivia, registrar.leadingTrivia)))
                            ])))
            }
        } else {
            generated.append("\(raw: access)let kvoRegistrar = KVORegistrar()")
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
        if !dependents.isEmpty, !foreignRoot {  // (after that error, a table would only add more)
            if let written = variables.first(where: { $0.declares("dependentKeyPaths") }) {
                context.diagnose(Diagnostic(node: written, message: KVOMacroDiagnostic.dependentKeyPathsWrittenByHand))
            } else {
                let entries = dependents.map { name, sources in
                    "\\\(className).\(name): [\(sources.map { rooted($0, in: className) }.joined(separator: ", "))]"
                }
                generated.append(
                    """
                    \(raw: access)\(raw: tableKeyword) var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        \(raw: dictionaryLiteral(entries))
                    }
                    """)
            }
        }

        if !variables.contains(where: { $0.declares("observableKeyPaths") }) {
            // Keyed by the plain name: `default` for a property declared `` `default` ``.
            let entries = members.compactMap(\.tableName).map { name in
                "\"\(name.filter { $0 != "`" })\": \\\(className).\(name)"
            }
            generated.append(
                """
                \(raw: access)\(raw: tableKeyword) var observableKeyPaths: [String: AnyKeyPath] {
                    \(raw: dictionaryLiteral(entries))
                }
                """)
        }
        return generated
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
        guard declaration.is(ClassDeclSyntax.self) else { return [] }
        switch ObservableMember(member) {
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
        case .unsupportedPattern(let message):
            context.diagnose(Diagnostic(node: member, message: message))
            return []
        case .observedByHand, .dependent, .leftAlone:
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
        guard declaration.is(ClassDeclSyntax.self), !protocols.isEmpty else { return [] }
        return [try ExtensionDeclSyntax("extension \(type.trimmed): KeyValueObservable {}")]
    }
}

extension ClassDeclSyntax {
    var isFinal: Bool { modifiers.contains { $0.name.tokenKind == .keyword(.final) } }

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

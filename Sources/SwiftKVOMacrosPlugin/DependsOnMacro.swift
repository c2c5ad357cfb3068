#if Macros
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@DependsOn(\.name, \.balance)` on a computed property: a marker read by
/// `@KeyValueObservable`, which writes the property and its sources into `dependentKeyPaths`.
/// Expands to nothing; checks here only what the attribute itself can get wrong (where it is
/// attached, its arguments), so each mistake is reported once, at the attribute. A source is
/// one property of the class (`\.name`) or another dependent key: SwiftKVO does not follow a
/// chain (`\.account.name`) for a dependent key, and refuses one at registration, so the
/// macro refuses it at compile time.
public struct DependsOnMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
            let property = variable.bindings.first, variable.bindings.count == 1
        else {
            context.diagnose(Diagnostic(node: node, message: KVOMacroDiagnostic.dependsOnNotAProperty))
            return []
        }
        let name = property.pattern.trimmedDescription
        if variable.isStatic {
            context.diagnose(Diagnostic(node: node, message: KVOMacroDiagnostic.dependsOnStatic(name)))
        } else if !property.isComputed {
            context.diagnose(
                Diagnostic(
                    node: node, message: KVOMacroDiagnostic.dependsOnStored(name),
                    fixIt: FixIt(
                        message: KVOMacroFixIt.removeDependsOn,
                        changes: [.replace(oldNode: Syntax(variable), newNode: Syntax(variable.removing(attribute: "DependsOn")))])))
        }
        let arguments = node.dependencyArguments
        if arguments.isEmpty {
            context.diagnose(Diagnostic(node: node, message: KVOMacroDiagnostic.dependsOnNoSources(name)))
        }
        for argument in arguments {
            guard let keyPath = argument.expression.as(KeyPathExprSyntax.self) else {
                context.diagnose(Diagnostic(node: argument.expression, message: KVOMacroDiagnostic.dependsOnNotAKeyPath))
                continue
            }
            if !keyPath.isOneProperty {
                context.diagnose(
                    Diagnostic(node: keyPath, message: KVOMacroDiagnostic.dependsOnChain(keyPath.trimmedDescription)))
            }
        }
        return []
    }
}
#endif

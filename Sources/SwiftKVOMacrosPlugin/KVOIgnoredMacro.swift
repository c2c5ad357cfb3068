#if Macros
import SwiftSyntax
import SwiftSyntaxMacros

/// `@KVOIgnored`: a marker read by `@KeyValueObservable`, which then leaves the property as
/// written (no `@Observed`, not in the name table). Expands to nothing.
public struct KVOIgnoredMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}
#endif

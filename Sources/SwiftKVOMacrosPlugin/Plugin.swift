#if Macros
import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin behind `SwiftKVOMacros`: the macros it declares, by implementation.
@main
struct SwiftKVOMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [
        KeyValueObservableMacro.self,
        KVOIgnoredMacro.self,
        DependsOnMacro.self,
    ]
}
#else
/// Without the "Macros" trait the plugin is an empty program: nothing expands it, and the
/// package builds without swift-syntax.
@main
enum SwiftKVOMacrosPlugin {
    static func main() {}
}
#endif

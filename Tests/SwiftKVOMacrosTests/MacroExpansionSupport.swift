#if Macros
import SwiftKVOMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// The macros under the names `SwiftKVOMacros` declares them with.
let kvoMacros: [String: MacroSpec] = [
    "KeyValueObservable": MacroSpec(type: KeyValueObservableMacro.self, conformances: ["KeyValueObservable"]),
    "KVOIgnored": MacroSpec(type: KVOIgnoredMacro.self),
    "DependsOn": MacroSpec(type: DependsOnMacro.self),
]

/// The same, for a class that conforms to `KeyValueObservable` already (the compiler then passes
/// the macro no protocol to add): a subclass of an observable class.
let kvoMacrosOnAConformingClass: [String: MacroSpec] = kvoMacros.merging([
    "KeyValueObservable": MacroSpec(type: KeyValueObservableMacro.self, conformances: [])
]) { _, new in new }

/// swift-syntax's `assertMacroExpansion`, reporting through Swift Testing.
func assertExpansion(
    _ source: String,
    expandedSource: String,
    diagnostics: [DiagnosticSpec] = [],
    applyFixIts: [String]? = nil,
    fixedSource: String? = nil,
    alreadyConforming: Bool = false,
    fileID: StaticString = #fileID,
    filePath: StaticString = #filePath,
    line: UInt = #line,
    column: UInt = #column
) {
    assertMacroExpansion(
        source, expandedSource: expandedSource, diagnostics: diagnostics,
        macroSpecs: alreadyConforming ? kvoMacrosOnAConformingClass : kvoMacros,
        applyFixIts: applyFixIts, fixedSource: fixedSource,
        failureHandler: { failure in
            Issue.record(
                Comment(rawValue: failure.message),
                sourceLocation: SourceLocation(
                    fileID: failure.location.fileID, filePath: failure.location.filePath,
                    line: failure.location.line, column: failure.location.column))
        },
        fileID: fileID, filePath: filePath, line: line, column: column)
}
#endif

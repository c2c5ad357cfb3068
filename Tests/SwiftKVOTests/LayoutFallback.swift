// The suite's one branch on the layout self-check's mode. `make unit-fallback` runs the whole suite
// with SWIFTKVO_RUNTIME_SELF_CHECK=fail: a test marked `.needsLayout` may then be refused, and only
// with the documented error (KVOError.unsupportedKeyPath naming the self-check); any other failure,
// a wrong value included, still fails it. In the plain run the trait changes nothing.

import Testing

@testable import SwiftKVO

/// Marks a test or suite whose registrations need the runtime layout readers.
struct NeedsLayout: TestTrait, SuiteTrait, TestScoping {
    /// What the layout decides there.
    let reason: String

    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil, isFallbackRun else { return try await function() }
        try await withKnownIssue("refused without the layout: \(reason)", isIntermittent: true) {
            try await function()
        } matching: { issue in
            String(describing: issue).contains(layoutRefusal)
        }
    }
}

extension Trait where Self == NeedsLayout {
    /// A test or suite whose registrations need the runtime layout readers
    /// (`reason`: what the layout decides there).
    static func needsLayout(_ reason: String) -> Self { NeedsLayout(reason: reason) }
}

/// Whether this run has the layout self-check forced to fail.
var isFallbackRun: Bool { LayoutSelfCheck.current.isForced }

/// What every refusal for want of the layout says.
let layoutRefusal = "did not pass SwiftKVO's self-check"

/// In a fallback run, whether `register` is refused for want of the layout, which is then
/// expected to be the documented refusal; `false` in the plain run, without calling it. For the
/// tests that register where a thrown error cannot reach them (`try!` on another thread).
func refusedWithoutLayout(_ register: () throws -> Void) -> Bool {
    guard isFallbackRun else { return false }
    do {
        try register()
        return false
    } catch let error as KVOError {
        #expect(error == .unsupportedKeyPath)
        #expect(error.detail?.contains(layoutRefusal) == true, "\(error)")
        return true
    } catch {
        Issue.record(error)
        return true
    }
}

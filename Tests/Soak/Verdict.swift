// Verdict.swift — where every broken invariant is reported.
//
// The first failure ends the round early (every worker polls `running`), the
// teardown still runs and checks what it can, and the report lists the
// failures. The run's exit status is non-zero if there was any.

import Synchronization

final class Verdict: Sendable {
    /// Failures kept for the report (the count goes on beyond it).
    private static let kept = 20

    private let failures = Locked<(messages: [String], count: Int)>(([], 0))
    private let failed = Atomic<Bool>(false)

    /// Records a broken invariant.
    func fail(_ message: String) {
        failures.withLock { state in
            state.count += 1
            if state.messages.count < Self.kept { state.messages.append(message) }
        }
        failed.store(true, ordering: .sequentiallyConsistent)
    }

    /// Records `message` unless `condition` holds.
    func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fail(message()) }
    }

    var hasFailed: Bool { failed.load(ordering: .relaxed) }

    /// The failures so far and how many there were in all.
    var report: (messages: [String], count: Int) { failures.withLock { $0 } }
}

/// The run's verdict.
let verdict = Verdict()

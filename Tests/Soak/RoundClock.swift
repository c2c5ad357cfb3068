// RoundClock.swift — when a round's workers stop.

final class RoundClock: Sendable {
    private let deadline: UInt64

    init(seconds: Double) {
        deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
    }

    /// Whether workers should go on: the round's time is not over and nothing failed.
    var running: Bool {
        !verdict.hasFailed && monotonicNanoseconds() < deadline
    }
}

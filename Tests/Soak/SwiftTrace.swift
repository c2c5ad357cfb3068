// SwiftTrace.swift — who a Swift-layer change or post called.
//
// The announcing thread runs the change with a trace active (csoak_trace_begin);
// every Receiver notes its record's id and whether the call was a prior
// notification. Checked afterwards: no observation was called twice in one
// phase (prior, then after the change); prior notifications all came first;
// and — for a property change — each phase called observations in
// registration order. Registrations of one subject happen while holding it and
// take their ids then, so registration order is id order.

import CSoakSupport

final class SwiftTrace {
    /// Far above the observations one change can reach at once: a subject has at most a few
    /// dozen, every sender's posts reach the live hub observers and the retired ones
    /// waiting in the graveyard (Graveyard.capacity), a few registrations each.
    static let capacity = 1024

    private let entries = UnsafeMutablePointer<UInt64>.allocate(capacity: SwiftTrace.capacity)

    deinit { entries.deallocate() }

    /// A trace entry: the id, and the phase in the low bit (0: prior notification).
    static func entry(_ id: UInt64, prior: Bool) -> UInt64 {
        id << 1 | (prior ? 0 : 1)
    }

    /// Runs `body` traced and checks the calls; returns how many there were.
    @discardableResult
    func run(_ what: @autoclosure () -> String, ordered: Bool, _ body: () -> Void) -> Int {
        csoak_trace_begin(entries, Self.capacity)
        body()
        let count = csoak_trace_end()
        guard count <= Self.capacity else {
            verdict.fail("Swift: \(what()) made \(count) calls, more than observations can exist")
            return count
        }
        let called = UnsafeBufferPointer(start: entries, count: count)
        for (index, entry) in called.enumerated() where index > 0 {
            let previous = called[index - 1]
            let id = entry >> 1
            verdict.check(
                entry & 1 != 0 || previous & 1 == 0,
                "Swift: \(what()) made a prior notification to observation \(id) after a change notification")
            if ordered && entry & 1 == previous & 1 {
                verdict.check(
                    entry > previous,
                    "Swift: \(what()) called observation \(id) after \(previous >> 1): "
                        + "not once each in registration order")
            } else {
                verdict.check(!called[..<index].contains(entry), "Swift: \(what()) called observation \(id) twice")
            }
        }
        return count
    }
}

// Backlog.swift — the engine's release backlog over a round (SPEC §2.23): a thread samples
// both hubs' pending releases every millisecond and keeps the peak, which must stay under the
// engine's bound; the slowest plain ckvo_unobserve (CSupport/backlog.c) is reported beside it,
// never judged (a time is not a verdict on a shared machine).

import CKVOCore
import CSoakSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

final class BacklogWatch: Sendable {
    /// The most pending releases a hub may show: the engine's backlog bound, plus what waits for
    /// its grace period (dispatches that linger hold it open for a moment), plus the share of the
    /// removals in progress. Twice the backlog bound covers all of it with room.
    static let bound = 2 * Int(CKVO_RELEASE_BACKLOG)

    /// The highest peak seen by any round.
    static let peak = Atomic<Int>(0)

    private final class Switch: Sendable {
        let stopped = Atomic<Bool>(false)
    }

    private let state = Switch()
    private let thread: WorkerThread

    /// Starts sampling `hubs` until `finish()`.
    init(hubs: [OpaquePointer]) {
        let state = self.state
        nonisolated(unsafe) let hubs = hubs  // hubs are thread-safe and outlive the watch
        thread = WorkerThread {
            var stats = ckvo_hub_stats_t()
            while !state.stopped.load(ordering: .relaxed) {
                for hub in hubs where ckvo_hub_stats(hub, &stats) == CKVO_OK {
                    BacklogWatch.peak.max(Int(stats.pending_releases))
                }
                usleep(1_000)
            }
        }
    }

    /// Stops sampling and judges the peak.
    func finish() {
        state.stopped.store(true, ordering: .relaxed)
        thread.join()
        let peak = Self.peak.load(ordering: .relaxed)
        verdict.check(
            peak <= Self.bound,
            "backlog: \(peak) releases were pending at once (bound \(Self.bound))")
    }
}

extension Atomic where Value == Int {
    /// Raises the value to at least `candidate`.
    fileprivate func max(_ candidate: Int) {
        var seen = load(ordering: .relaxed)
        while candidate > seen {
            let (exchanged, current) = compareExchange(
                expected: seen, desired: candidate, ordering: .relaxed)
            if exchanged { return }
            seen = current
        }
    }
}

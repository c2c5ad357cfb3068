// RetiredRecords.swift — C-API observation records after their removal.
//
// A record stays allocated after its release for a while (a quarantine of the
// most recently released records), so that a callback or a second release
// arriving late finds a live record that reports it instead of freed memory.
// When a record leaves the quarantine, and for every record at the end of the
// round (after the hub was flushed and destroyed), its release count must be
// exactly 1.

import CKVOCore
import CSoakSupport

/// A record handle that may cross threads (the record's fields are atomics).
struct RecordHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

final class RetiredRecords: Sendable {
    /// Released records kept before they are freed.
    static let quarantineCapacity = 8192

    private struct State {
        var waiting: [RecordHandle] = []
        var quarantine: [RecordHandle] = []
    }

    private let state = Locked(State())

    /// Takes a record whose removal returned.
    func retire(_ record: OpaquePointer) {
        state.withLock { $0.waiting.append(RecordHandle(raw: record)) }
    }

    /// Moves released records into the quarantine and frees the oldest beyond its capacity.
    func sweep() {
        let evicted: [RecordHandle] = state.withLock { state in
            var stillWaiting: [RecordHandle] = []
            for record in state.waiting {
                if csoak_obs_releases(record.raw) == 0 {
                    stillWaiting.append(record)
                } else {
                    state.quarantine.append(record)
                }
            }
            state.waiting = stillWaiting
            let excess = state.quarantine.count - Self.quarantineCapacity
            guard excess > 0 else { return [] }
            defer { state.quarantine.removeFirst(excess) }
            return Array(state.quarantine.prefix(excess))
        }
        evicted.forEach(free)
    }

    /// Frees every record; each must have been released exactly once.
    func finish() {
        let all = state.withLock { state in
            defer { state = State() }
            return state.waiting + state.quarantine
        }
        all.forEach(free)
    }

    private func free(_ record: RecordHandle) {
        let releases = csoak_obs_releases(record.raw)
        verdict.check(
            releases == 1,
            "C API: observation \(csoak_obs_id(record.raw))'s context released \(releases) times, not once")
        Tally.shared.add(
            .engineCallbacks,
            Int(
                csoak_obs_calls(record.raw) + csoak_obs_prior_calls(record.raw)
                    + csoak_obs_initial_calls(record.raw)))
        csoak_obs_destroy(record.raw)
    }
}

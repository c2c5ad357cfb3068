// Tally.swift — how many operations of each kind the soak made, for the report.
//
// Workers count into a private `LocalTally` and merge it once when they stop;
// code that runs anywhere (a record verified on whichever thread released it)
// adds to the shared tally directly.

enum Count: Int, CaseIterable {
    // C API phase
    case announcements, priorAnnouncements, engineCallbacks, engineObservations
    case plainRemovals, syncRemovals, deferredRemovals, removedByOthers
    case objectRemovals, ownerRemovals, flushes, duplicateRegistrations
    case engineSpans
    // Swift layer
    case swiftChanges, arrayChanges, swiftCallbacks, tokenObservations, controllerObservations
    case subjectRanges
    // Named notifications
    case posts, hubDeliveries, listenerRegistrations
    // Threads
    case threadsStarted
}

/// One worker's counts.
struct LocalTally {
    private(set) var counts = [Int](repeating: 0, count: Count.allCases.count)

    mutating func add(_ count: Count, _ amount: Int = 1) {
        counts[count.rawValue] += amount
    }

    mutating func merge(_ other: LocalTally) {
        for index in counts.indices { counts[index] += other.counts[index] }
    }
}

final class Tally: Sendable {
    /// The whole run's counts (both rounds).
    static let shared = Tally()

    private let counts = Locked([Int](repeating: 0, count: Count.allCases.count))

    func merge(_ local: LocalTally) {
        counts.withLock { counts in
            for index in counts.indices { counts[index] += local.counts[index] }
        }
    }

    func add(_ count: Count, _ amount: Int = 1) {
        counts.withLock { $0[count.rawValue] += amount }
    }

    subscript(_ count: Count) -> Int { counts.withLock { $0[count.rawValue] } }
}

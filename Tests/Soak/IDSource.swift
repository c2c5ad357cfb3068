// IDSource.swift — unique, increasing identifiers.

import Synchronization

final class IDSource: Sendable {
    private let last = Atomic<UInt64>(0)

    /// The next identifier (the first is 1).
    func next() -> UInt64 {
        last.add(1, ordering: .relaxed).newValue
    }
}

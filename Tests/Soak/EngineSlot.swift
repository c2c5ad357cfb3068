// EngineSlot.swift — a live C-API observation, published for the dispatchers.
//
// An observer thread publishes each observation it may be held to — one that
// registered with no removal of its object or owner in flight and does not
// remove itself — once its registration returned. A dispatcher, after its
// dispatch ended, reads every slot and requires each observation that
// registered before the dispatch started and had not begun its removal when
// the dispatch ended (nor been exposed to a removal of its object or owner
// since it registered) to appear exactly once among the calls it traced.
//
// Reads are consistent without a lock: ids are unique, the owner clears the id
// before it rewrites a slot and stores it last, and a reader that sees the same
// id before and after reading the fields has read one observation's fields.

import CKVOCore
import CSoakSupport
import Synchronization

final class EngineSlot: Sendable {
    /// What the dispatchers need to know about one observation.
    struct Observation {
        var id: UInt64
        /// Index of its shared object; -1 for a wildcard (NULL object).
        var objectIndex: Int
        /// Index of its shared owner; -1 for none.
        var ownerIndex: Int
        var key: ckvo_key_t
        var options: ckvo_options_t
        /// Clock after its ckvo_observe returned.
        var registered: UInt64
        /// Removals of its object and owner marked before it registered.
        var objectRemovals: UInt64
        var ownerRemovals: UInt64
    }

    /// Not being removed.
    static let notRemoving: UInt64 = 0
    /// Being removed; the clock time is not stored yet.
    static let removalUnstamped = UInt64.max

    private let id = Atomic<UInt64>(0)
    private let objectIndex = Atomic<Int>(-1)
    private let ownerIndex = Atomic<Int>(-1)
    private let key = Atomic<UInt32>(0)
    private let options = Atomic<UInt32>(0)
    private let registered = Atomic<UInt64>(0)
    private let objectRemovals = Atomic<UInt64>(0)
    private let ownerRemovals = Atomic<UInt64>(0)
    private let removalStart = Atomic<UInt64>(0)

    /// Publishes `observation` (owner thread only; the slot must be empty).
    func publish(_ observation: Observation) {
        objectIndex.store(observation.objectIndex, ordering: .sequentiallyConsistent)
        ownerIndex.store(observation.ownerIndex, ordering: .sequentiallyConsistent)
        key.store(observation.key, ordering: .sequentiallyConsistent)
        options.store(observation.options, ordering: .sequentiallyConsistent)
        registered.store(observation.registered, ordering: .sequentiallyConsistent)
        objectRemovals.store(observation.objectRemovals, ordering: .sequentiallyConsistent)
        ownerRemovals.store(observation.ownerRemovals, ordering: .sequentiallyConsistent)
        removalStart.store(Self.notRemoving, ordering: .sequentiallyConsistent)
        id.store(observation.id, ordering: .sequentiallyConsistent)
    }

    /// Stamps the start of the observation's removal (owner thread, before it removes it).
    ///
    /// The "removing" mark is stored before the clock ticks: a reader that finds no mark after
    /// its dispatch ended knows the removal's tick comes after that end.
    func beginRemoval() {
        removalStart.store(Self.removalUnstamped, ordering: .sequentiallyConsistent)
        removalStart.store(csoak_clock_next(), ordering: .sequentiallyConsistent)
    }

    /// Empties the slot (owner thread).
    func clear() {
        id.store(0, ordering: .sequentiallyConsistent)
    }

    /// The published observation and the start of its removal (`notRemoving`,
    /// `removalUnstamped` or a clock time), or nil if the slot is empty or changed while read.
    func read() -> (observation: Observation, removalStart: UInt64)? {
        let before = id.load(ordering: .sequentiallyConsistent)
        guard before != 0 else { return nil }
        let observation = Observation(
            id: before,
            objectIndex: objectIndex.load(ordering: .sequentiallyConsistent),
            ownerIndex: ownerIndex.load(ordering: .sequentiallyConsistent),
            key: key.load(ordering: .sequentiallyConsistent),
            options: options.load(ordering: .sequentiallyConsistent),
            registered: registered.load(ordering: .sequentiallyConsistent),
            objectRemovals: objectRemovals.load(ordering: .sequentiallyConsistent),
            ownerRemovals: ownerRemovals.load(ordering: .sequentiallyConsistent))
        let removal = removalStart.load(ordering: .sequentiallyConsistent)
        guard id.load(ordering: .sequentiallyConsistent) == before else { return nil }
        return (observation, removal)
    }
}

// Which properties a key path reads: with this thread's recorder on, `object[keyPath:]` is read
// once, and each wrapper getter on the way records its property and the key path the compiler
// wrote for it (KeyPathRegistry.swift compares them).

import Synchronization

/// One property read recorded while probing.
struct ProbeRecord {
    let object: AnyObject
    let property: PropertyKey
    /// The property's own key path, rooted at its declaring class
    /// (`\BaseAccount.name`): the compiler hands it to the wrapper's accessor.
    let keyPath: AnyKeyPath
}

/// The per-thread recorder behind key-path probing.
@usableFromInline
enum Probe {
    /// How many threads are probing right now; getters only look at their
    /// thread's recorder when this is non-zero (one relaxed load otherwise).
    @usableFromInline
    static let activeCount = Atomic<Int>(0)

    final class Recorder {
        var records: [ProbeRecord] = []
        var depth = 0
    }

    static let recorder = ThreadLocal<Recorder>()

    /// Serializes the modifying accesses that computing a wrapper's offset
    /// takes, so that threads first resolving key paths of one object never
    /// take them at once. (Reading the offset from the storage's key path
    /// instead would pass that key path on as a value, which makes every
    /// access to the storage, each set included, check exclusivity at run
    /// time.)
    private static let offsetLock = LockedState(0)

    @inlinable @inline(__always)
    static var isActive: Bool { activeCount.load(ordering: .relaxed) != 0 }

    /// Called by a wrapper's getter when ``isActive``: records the property
    /// if this thread is probing.
    ///
    /// - Parameters:
    ///   - object: The object the getter runs on; `Object` is the class that
    ///     declares the property.
    ///   - state: The wrapper's setter state (its property, once resolved).
    ///   - offset: The wrapper's byte offset in `object`, computed only for
    ///     a wrapper not resolved yet, and one probe at a time (it takes a
    ///     modifying access to the wrapper's storage).
    ///   - keyPath: The wrapped property's key path: a closure, so that the
    ///     getter's fast path never instantiates the key path (the optimizer
    ///     propagates the literal into the closure, which only this probe calls).
    @usableFromInline
    static func record<Object: KeyValueObservable, Storage: NotifyingStorage>(
        _ object: Object, storage: Storage.Type, state: UInt64, offset: () -> Int,
        keyPath: () -> AnyKeyPath
    ) {
        guard let recorder = recorder.currentValue, recorder.depth > 0 else { return }
        let property =
            state & SetterState.resolved != 0
            ? SetterState.property(state).takeUnretainedValue()
            : PropertyRegistry.property(
                declaredBy: Object.self, storage: Storage.self, offset: offsetLock.withLock { _ in offset() })
        recorder.records.append(ProbeRecord(object: object, property: property, keyPath: keyPath()))
    }

    /// Runs `body` with this thread recording property reads; returns the records.
    static func run(_ body: () -> Void) -> [ProbeRecord] {
        let recorder = recorder.value { Recorder() }
        let saved = recorder.records
        recorder.records = []
        recorder.depth += 1
        activeCount.add(1, ordering: .relaxed)
        body()
        activeCount.subtract(1, ordering: .relaxed)
        recorder.depth -= 1
        let records = recorder.records
        recorder.records = saved
        return records
    }
}

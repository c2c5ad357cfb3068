/// The storage of an observable property wrapper (`@Observed`, `@ObservedArray`,
/// `@ObservedSet`): its value and its setter state (``SetterState``), and the
/// accessors every wrapper's `_enclosingInstance` subscript forwards to.
@usableFromInline
protocol NotifyingStorage {
    associatedtype Value
    var storage: Value { get set }
    var state: UInt64 { get set }

    /// What the property keeps to reach this wrapper's storage in an
    /// `Object` without a key path, given the wrapper's byte offset; `nil`
    /// when nothing needs it.
    static func storageAccess<Object: KeyValueObservable>(
        in _: Object.Type, offset: Int
    ) -> AnyObject?
}

extension NotifyingStorage {
    @usableFromInline
    static func storageAccess<Object: KeyValueObservable>(
        in _: Object.Type, offset: Int
    ) -> AnyObject? { nil }
}

extension NotifyingStorage {
    // The wrappers' accessors. Always inlined, so the key path literals the
    // compiler passes fold into direct stored-property accesses (no key path
    // runtime, no allocation): nothing here may pass a key path on as a value,
    // which would make every access instantiate it. The probe and the bridge
    // get the key paths through closures that capture only the literals.

    /// The getter of the property `wrappedKeyPath` of `object`, stored at `storageKeyPath`.
    @inlinable @inline(__always)
    static func value<Object: KeyValueObservable>(
        in object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> Value {
        if Probe.isActive {
            Probe.record(
                object, storage: Self.self, state: object[keyPath: storageKeyPath].state,
                offset: { Engine.offset(of: storageKeyPath, in: object) },
                keyPath: { wrappedKeyPath })
        }
        if Object.isObservationBridged { ObservationBridge.make(.access, object, { wrappedKeyPath }) }
        return object[keyPath: storageKeyPath].storage
    }

    /// The setter of the property `wrappedKeyPath` of `object`, stored at `storageKeyPath`.
    @inlinable @inline(__always)
    static func assign<Object: KeyValueObservable>(
        _ newValue: Value, in object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) {
        let state = object[keyPath: storageKeyPath].state
        if Object.isObservationBridged {
            notifyingSet(
                object, Engine.offset(of: storageKeyPath, in: object), newValue, state: state,
                keyPath: { wrappedKeyPath })
            return
        }
        // Fast path: resolved, automatic, no dependents, nobody observing
        // the key on any object (the key's probe: one load, no call). Kept
        // this small so that it inlines into loops; an object never observed
        // is told apart in the slow path.
        if state & SetterState.flags == SetterState.resolved,
            !Engine.hasObservers(SetterState.probe(state))
        {
            object[keyPath: storageKeyPath].storage = newValue
            return
        }
        // The wrapper's offset folds to a constant; the slow path is
        // outlined so the fast path needs no stack frame.
        notifyingSet(
            object, Engine.offset(of: storageKeyPath, in: object), newValue, state: state, keyPath: { wrappedKeyPath })
    }
}

extension NotifyingStorage {
    /// The setter's slow path: resolves the key on first use, announces the
    /// change. Reaches the wrapper by its byte offset in `object` (which the
    /// caller keeps alive for the call), so it can be outlined without a key path.
    ///
    /// For a bridged class, Observation's `willSet` and `didSet` for the
    /// property at `keyPath` surround the store itself, after SwiftKVO's prior
    /// notifications and before its others: an `Observations` sequence, which
    /// reads the value again once `willSet` comes, finds the store as close
    /// behind it as with `@Observable`. (`keyPath` is called only then.)
    @inlinable @inline(never)
    static func notifyingSet<Object: KeyValueObservable>(
        _ object: Object, _ offset: Int, _ newValue: Value, state: UInt64,
        keyPath: () -> ReferenceWritableKeyPath<Object, Value>
    ) {
        // `object` is borrowed from the caller for the whole call: the
        // wrapper's address stays valid without extending its lifetime.
        let wrapper = UnsafeMutableRawPointer(mutating: Engine.address(object))
            .advanced(by: offset).assumingMemoryBound(to: Self.self)
        func store() {
            guard Object.isObservationBridged else { return wrapper.pointee.storage = newValue }
            ObservationBridge.make(.willSet, object, keyPath)
            wrapper.pointee.storage = newValue
            ObservationBridge.make(.didSet, object, keyPath)
        }
        var state = state
        // Manual notification, or a plain property of an object never
        // observed while the key is observed elsewhere (the sparse case):
        // just store.
        if state & SetterState.manual != 0
            || (state & SetterState.flags == SetterState.resolved
                && !object.kvoRegistrar.mayBeObserved)
        {
            return store()
        }
        if state & SetterState.resolved == 0 {
            state = SetterState.resolve(object, storage: Self.self, offset: offset)
            wrapper.pointee.state = state
        }
        ChangeAnnouncement.perform(on: object, state: state) {
            wrapper.pointee.storage
        } announce: { prior, key, address, old in
            Engine.announceSetting(
                prior: prior, object: address, key: key, old: old, new: prior ? nil : newValue)
        } change: {
            store()
        }
    }
}

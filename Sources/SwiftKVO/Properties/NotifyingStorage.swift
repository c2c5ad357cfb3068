/// The storage of an observable property wrapper (`@Observed`, `@ObservedArray`):
/// its value and its setter state (``SetterState``), and the setter's slow
/// path they share.
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
    /// The setter's slow path: resolves the key on first use, announces the
    /// change. Reaches the wrapper by its byte offset in `object` (which the
    /// caller keeps alive for the call), so it can be outlined without a key path.
    @inlinable @inline(never)
    static func notifyingSet<Object: KeyValueObservable>(
        _ object: Object, _ offset: Int, _ newValue: Value, state: UInt64
    ) {
        // `object` is borrowed from the caller for the whole call: the
        // wrapper's address stays valid without extending its lifetime.
        let wrapper = UnsafeMutableRawPointer(mutating: Engine.address(object))
            .advanced(by: offset).assumingMemoryBound(to: Self.self)
        var state = state
        // Manual notification, or a plain property of an object never
        // observed while the key is observed elsewhere (the sparse case):
        // just store.
        if state & SetterState.manual != 0
            || (state & SetterState.flags == SetterState.resolved
                && !object.kvoRegistrar.mayBeObserved)
        {
            wrapper.pointee.storage = newValue
            return
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
            wrapper.pointee.storage = newValue
        }
    }
}

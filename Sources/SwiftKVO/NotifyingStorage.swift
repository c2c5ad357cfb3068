/// The storage of an observable property wrapper (`@Observed`, `@ObservedArray`):
/// its value, its setter state (``SetterState``) and its declaration site, and
/// the setter's slow path they share.
@usableFromInline
protocol NotifyingStorage {
    associatedtype Value
    var storage: Value { get set }
    var state: UInt64 { get set }
    var site: PropertySite { get }
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
        if state & SetterState.manual != 0 {
            wrapper.pointee.storage = newValue
            return
        }
        if state & SetterState.resolved == 0 {
            state = KeyPathRegistry.setterState(
                object, site: wrapper.pointee.site, valueType: Value.self)
            wrapper.pointee.state = state
        }
        let key = SetterState.key(state)
        let probe = SetterState.probe(state)
        let address = Engine.address(object)
        let dependents =
            state & SetterState.hasDependents != 0
            ? Dependencies.willChange(of: key, on: object) : nil
        if Engine.hasObservers(probe) {
            let old = wrapper.pointee.storage
            if Engine.hasPriorObservers(probe) {
                Engine.announceSetting(prior: true, object: address, key: key, old: old, new: nil)
            }
            wrapper.pointee.storage = newValue
            Engine.announceSetting(
                prior: false, object: address, key: key, old: old, new: newValue)
        } else {
            wrapper.pointee.storage = newValue
        }
        if let dependents { Dependencies.didChange(dependents) }
    }
}

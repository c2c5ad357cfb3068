/// How an automatic change of a resolved property is announced, for the
/// setters and the array mutator alike: dependent keys learn their old values
/// first; then, only when the key may be observed, prior observers hear of the
/// change, it is made, and every observer hears of it; then dependent keys
/// announce theirs.
@usableFromInline
enum ChangeAnnouncement {
    /// Announces `change` of the property whose setter state is `state`.
    ///
    /// - Parameters:
    ///   - before: Reads what the announcements carry from before the change
    ///     (the old value); called only when the key may be observed.
    ///   - announce: Announces a prior (`true`) or did-change notification.
    ///   - change: Makes the change.
    @inlinable @inline(__always)
    static func perform<Object: KeyValueObservable, Old>(
        on object: Object, state: UInt64, before: () -> Old,
        announce: (_ prior: Bool, _ key: EngineKey, _ address: UnsafeRawPointer, _ old: Old) -> Void,
        change: () -> Void
    ) {
        let key = SetterState.key(state)
        let probe = SetterState.probe(state)
        let dependents =
            state & SetterState.hasDependents != 0
            ? Dependencies.willChange(of: key, on: object) : nil
        if Engine.hasObservers(probe) {
            let address = Engine.address(object)
            let old = before()
            if Engine.hasPriorObservers(probe) { announce(true, key, address, old) }
            change()
            announce(false, key, address, old)
        } else {
            change()
        }
        if let dependents { Dependencies.didChange(dependents) }
    }
}

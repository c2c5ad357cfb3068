// Will/did announcements made by the object itself (SPEC §2.14): for `notifiesAutomatically: false`
// properties, values SwiftKVO does not store, and to-many changes.

extension KeyValueObservable {
    /// Announces that the value at `keyPath` is about to change: reads the
    /// current value as the old value and delivers prior notifications.
    ///
    /// Pair every call with ``didChangeValue(for:)`` on the same thread. Pairs
    /// may nest (also for the same key); each pair notifies once. Use it for
    /// properties declared `@Observed(notifiesAutomatically: false)`, or to
    /// announce a change of a value SwiftKVO does not store (a key declared
    /// in ``dependentKeyPaths``: its own dependents are notified too).
    /// Callbacks run synchronously on this thread. For a key path that
    /// ``observe(_:options:changeHandler:)`` would refuse, nothing can be
    /// observed, and the pair is a no-op.
    public func willChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        let pending = ManualChanges.pending.value { ManualChanges.Stack() }
        guard let resolved = ManualChanges.key(keyPath, on: self) else {
            pending.entries.append(.init(address: 0, key: 0, old: nil, dependents: nil))
            return
        }
        let address = Engine.address(self)
        let dependents = Dependencies.willChange(of: resolved.key, on: self)
        var old: Value?
        if Engine.hasObservers(address, resolved.key) {
            let value = self[keyPath: keyPath]
            old = value
            Engine.announce(
                prior: true, object: address, key: resolved.key, kind: .setting, old: value,
                new: nil, indexes: [])
        }
        pending.entries.append(
            .init(
                address: Engine.address(of: self), key: resolved.key, old: old,
                dependents: dependents))
    }

    /// Announces that the value at `keyPath` has changed: delivers the change
    /// (old value from the matching ``willChangeValue(for:)``, new value read
    /// now) to every observer, synchronously on this thread. Without a
    /// matching will-change call, the change carries no old value.
    public func didChangeValue<Value>(for keyPath: KeyPath<Self, Value>) {
        let resolved = ManualChanges.key(keyPath, on: self)
        let entry = ManualChanges.pending.currentValue?.pop(
            address: resolved == nil ? 0 : Engine.address(of: self), key: resolved?.key ?? 0)
        guard let resolved else { return }
        let address = Engine.address(self)
        if Engine.hasObservers(address, resolved.key) {
            let new = self[keyPath: keyPath]
            Engine.announce(
                prior: false, object: address, key: resolved.key, kind: .setting,
                old: entry?.old as? Value, new: new, indexes: [])
        }
        if let dependents = entry?.dependents { Dependencies.didChange(dependents) }
    }
}

extension KeyValueObservable {
    /// Announces that elements of the array at `keyPath` are about to be
    /// inserted, removed or replaced at `indexes` (manual to-many
    /// notification, like Apple KVO's `willChange(_:valuesAt:forKey:)`).
    ///
    /// Prior observers receive `kind`, the ascending `indexes` and, for a
    /// removal or replacement, the affected elements as old value. Pair with
    /// ``didChange(_:at:for:)`` on the same thread. Indexes out of range are
    /// announced without values (never a crash).
    public func willChange<Element>(
        _ kind: ChangeKind, at indexes: [Int], for keyPath: KeyPath<Self, [Element]>
    ) {
        let pending = ManualChanges.pending.value { ManualChanges.Stack() }
        guard let resolved = ManualChanges.key(keyPath, on: self) else {
            pending.entries.append(.init(address: 0, key: 0, old: nil, dependents: nil))
            return
        }
        let indexes = Array(Set(indexes)).sorted()
        let address = Engine.address(self)
        let dependents = Dependencies.willChange(of: resolved.key, on: self)
        var old: [Element]?
        if Engine.hasObservers(address, resolved.key) {
            if kind == .removal || kind == .replacement {
                old = Self.elements(of: self[keyPath: keyPath], at: indexes)
            }
            Engine.announce(
                prior: true, object: address, key: resolved.key, kind: kind, old: old, new: nil,
                indexes: indexes)
        }
        pending.entries.append(
            .init(
                address: Engine.address(of: self), key: resolved.key, old: old,
                dependents: dependents))
    }

    /// Announces that elements of the array at `keyPath` were inserted,
    /// removed or replaced at `indexes`: observers receive `kind`, the
    /// ascending `indexes`, the old elements from the matching
    /// ``willChange(_:at:for:)`` and, for an insertion or replacement, the
    /// elements now at `indexes` as new value.
    public func didChange<Element>(
        _ kind: ChangeKind, at indexes: [Int], for keyPath: KeyPath<Self, [Element]>
    ) {
        let resolved = ManualChanges.key(keyPath, on: self)
        let entry = ManualChanges.pending.currentValue?.pop(
            address: resolved == nil ? 0 : Engine.address(of: self), key: resolved?.key ?? 0)
        guard let resolved else { return }
        let indexes = Array(Set(indexes)).sorted()
        let address = Engine.address(self)
        if Engine.hasObservers(address, resolved.key) {
            let new: [Element]? =
                kind == .insertion || kind == .replacement
                ? Self.elements(of: self[keyPath: keyPath], at: indexes) : nil
            Engine.announce(
                prior: false, object: address, key: resolved.key, kind: kind,
                old: entry?.old as? [Element], new: new, indexes: indexes)
        }
        if let dependents = entry?.dependents { Dependencies.didChange(dependents) }
    }

    private static func elements<Element>(of array: [Element], at indexes: [Int]) -> [Element]? {
        guard indexes.allSatisfy({ $0 >= 0 && $0 < array.count }) else { return nil }
        return indexes.map { array[$0] }
    }
}

/// Will-change calls waiting for their did-change, per thread.
enum ManualChanges {
    struct Entry {
        let address: UInt
        let key: EngineKey
        let old: Any?
        let dependents: DependentChanges?
    }

    final class Stack {
        /// Used by its thread only: no dynamic exclusivity check.
        @exclusivity(unchecked) var entries: [Entry] = []

        func pop(address: UInt, key: EngineKey) -> Entry? {
            guard let index = entries.lastIndex(where: { $0.address == address && $0.key == key })
            else { return nil }
            return entries.remove(at: index)
        }
    }

    static let pending = ThreadLocal<Stack>()

    /// The key a manual announcement for `keyPath` notifies: a property
    /// (also one read through an override of its accessors) or a dependent
    /// key; `nil` (the announcement is a no-op) for anything else.
    static func key<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) -> ResolvedKeyPath? {
        guard let resolved = try? KeyPathRegistry.resolve(keyPath, on: object),
            resolved.key != 0
        else { return nil }
        return resolved
    }
}

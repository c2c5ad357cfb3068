/// Makes an array property of a ``KeyValueObservable`` class observable as a
/// to-many relationship: insertions, removals and replacements are announced
/// with their indexes.
///
/// ```swift
/// final class Account: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     static var observableKeyPaths: [String: AnyKeyPath] { ["transactions": \Account.transactions] }
///     @ObservedArray var transactions: [Transaction] = []
/// }
/// account.mutableArray(\.transactions).append(t)    // kind .insertion, indexes [n]
/// account.transactions = []                          // kind .setting
/// ```
///
/// Assigning the property (including in-place mutation such as
/// `account.transactions.append(t)`, which Swift performs as get + set)
/// announces a ``ChangeKind/setting`` with the whole old and new arrays.
/// Mutations made through ``KeyValueObservable/mutableArray(_:)`` announce
/// ``ChangeKind/insertion``, ``ChangeKind/removal`` or ``ChangeKind/replacement``
/// with the affected indexes; their old and new values are the *affected
/// elements* (removed/replaced elements as `oldValue`, inserted/replacing
/// elements as `newValue`, in index order), as in Apple KVO.
///
/// Thread safety and cost as for ``Observed``.
@propertyWrapper
public struct ObservedArray<Element> {
    @usableFromInline
    var storage: [Element]

    /// ``SetterState``, as for ``Observed``.
    @usableFromInline
    var state: UInt64

    /// An observable array property with automatic notification.
    @inlinable
    public init(wrappedValue: [Element]) {
        self.storage = wrappedValue
        self.state = 0
    }

    /// An observable array property; with `notifiesAutomatically: false`
    /// assignments and ``ObservedArrayMutator`` mutations never notify.
    @inlinable
    public init(wrappedValue: [Element], notifiesAutomatically: Bool) {
        self.storage = wrappedValue
        self.state = notifiesAutomatically ? 0 : SetterState.manual
    }

    /// Unavailable: `@ObservedArray` works only on properties of classes that conform
    /// to ``KeyValueObservable``.
    @available(*, unavailable, message: "@ObservedArray is only available on properties of classes conforming to KeyValueObservable")
    public var wrappedValue: [Element] {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The wrapped property's accessors, with access to the enclosing object.
    @inlinable
    public static subscript<Object: KeyValueObservable>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, [Element]>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, ObservedArray<Element>>
    ) -> [Element] {
        @inline(__always) get { Self.value(in: object, wrapped: wrappedKeyPath, storage: storageKeyPath) }
        @inline(__always) set { Self.assign(newValue, in: object, wrapped: wrappedKeyPath, storage: storageKeyPath) }
    }
}

extension ObservedArray: Sendable where Element: Sendable {}

extension ObservedArray: NotifyingStorage {
    @usableFromInline
    static func storageAccess<Object: KeyValueObservable>(
        in _: Object.Type, offset: Int
    ) -> AnyObject? {
        StorageAccess<Object, ObservedArray<Element>>(offset: offset)
    }
}

/// Mutates an `@ObservedArray` property and announces each mutation with its
/// kind and indexes, like Apple KVO's `mutableArrayValue(forKey:)`.
///
/// Get one with ``KeyValueObservable/mutableArray(_:)``. Each call notifies
/// once: prior observers before the mutation, every observer after it,
/// synchronously on the calling thread. Out-of-range indexes are a no-op that
/// returns `false` / `nil` (never a crash).
///
/// ## Observers that change the array first
/// Callbacks may change values, so a prior observer (of the array, or of a
/// dependent key computed from it) may change the array before the mutation
/// is made. The mutator therefore checks its indexes twice: before the prior
/// notifications, against the array they describe, and again after them,
/// against the array it is about to change.
/// - Still in range: the mutation is made on the array as it is then, and
///   the change announced after it says what was done (the elements actually
///   removed or replaced), which may differ from what the prior
///   notification announced.
/// - Out of range now: nothing is changed and the call returns `false` /
///   `nil`. The prior notification already delivered is still answered, so
///   no observer is left waiting for the change it announced: observers of
///   the array receive a ``ChangeKind/setting`` whose old and new values are
///   both the array as it is (no indexes), and observers of dependent keys
///   the values read after the call, as for any change.
/// Nothing is announced for a call found out of range before any prior
/// notification went out.
///
/// If the key path is not an `@ObservedArray` property, the mutator falls back
/// to assigning the whole array through the key path (a ``ChangeKind/setting``
/// if the property is `@Observed`).
public struct ObservedArrayMutator<Object: KeyValueObservable, Element> {
    let object: Object
    let keyPath: ReferenceWritableKeyPath<Object, [Element]>
    let access: StorageAccessBase<[Element]>?

    init(object: Object, keyPath: ReferenceWritableKeyPath<Object, [Element]>, access: StorageAccessBase<[Element]>?) {
        self.object = object
        self.keyPath = keyPath
        self.access = access
    }

    /// The current elements.
    public var elements: [Element] { object[keyPath: keyPath] }

    /// The number of elements.
    public var count: Int { elements.count }

    /// Appends `element` (an insertion at the old end index).
    public func append(_ element: Element) {
        insert(contentsOf: [element], at: count)
    }

    /// Appends `elements` (one insertion of all of them).
    public func append(contentsOf elements: [Element]) {
        insert(contentsOf: elements, at: count)
    }

    /// Inserts `element` at `index` (`0...count`). Returns `false`, changing
    /// nothing, for an index out of range — also when a prior observer made
    /// it so (see "Observers that change the array first").
    @discardableResult
    public func insert(_ element: Element, at index: Int) -> Bool {
        insert(contentsOf: [element], at: index)
    }

    /// Inserts `elements` starting at `index` (`0...count`). Returns `false`,
    /// changing nothing, for an index out of range — also when a prior
    /// observer made it so (see "Observers that change the array first").
    @discardableResult
    public func insert(contentsOf elements: [Element], at index: Int) -> Bool {
        if elements.isEmpty { return index >= 0 && index <= count }
        return perform { current in
            guard index >= 0, index <= current.count else { return nil }
            return Edit(
                kind: .insertion, indexes: Array(index..<(index + elements.count)), old: nil,
                new: elements
            ) { $0.insert(contentsOf: elements, at: index) }
        } != nil
    }

    /// Removes and returns the element at `index`; `nil`, changing nothing,
    /// when out of range — also when a prior observer made it so (see
    /// "Observers that change the array first"). The element returned is the
    /// one removed, read when the removal is made.
    @discardableResult
    public func remove(at index: Int) -> Element? {
        perform { current in
            guard index >= 0, index < current.count else { return nil }
            return Edit(kind: .removal, indexes: [index], old: [current[index]], new: nil) {
                $0.remove(at: index)
            }
        }?.old?.first
    }

    /// Removes the elements at `indexes` (any order, duplicates ignored). Returns
    /// `false`, changing nothing, if any index is out of range — also when a
    /// prior observer made it so (see "Observers that change the array first").
    @discardableResult
    public func remove(at indexes: [Int]) -> Bool {
        let sorted = Array(Set(indexes)).sorted()
        if sorted.isEmpty { return true }
        return perform { current in
            guard sorted.allSatisfy({ $0 >= 0 && $0 < current.count }) else { return nil }
            return Edit(kind: .removal, indexes: sorted, old: sorted.map { current[$0] }, new: nil) {
                for index in sorted.reversed() { $0.remove(at: index) }
            }
        } != nil
    }

    /// Removes every element (one removal of all indexes; nothing when already empty).
    public func removeAll() {
        remove(at: Array(0..<count))
    }

    /// Removes and returns the last element; `nil` when empty.
    @discardableResult
    public func removeLast() -> Element? {
        remove(at: count - 1)
    }

    /// Replaces the element at `index`. Returns `false`, changing nothing,
    /// when out of range — also when a prior observer made it so (see
    /// "Observers that change the array first").
    @discardableResult
    public func replace(at index: Int, with element: Element) -> Bool {
        perform { current in
            guard index >= 0, index < current.count else { return nil }
            return Edit(kind: .replacement, indexes: [index], old: [current[index]], new: [element]) {
                $0[index] = element
            }
        } != nil
    }

    /// One mutation as planned against a given array: what it announces and
    /// how it is made. `apply` is valid only on that array (its indexes were
    /// checked against it).
    private struct Edit {
        let kind: ChangeKind
        let indexes: [Int]
        let old: [Element]?
        let new: [Element]?
        let apply: (inout [Element]) -> Void
    }

    /// Plans the mutation against the array as it is, announces it and makes
    /// it; returns the edit made, `nil` if `plan` found it out of range.
    ///
    /// `plan` is asked again right before the change, on the array it is
    /// applied to — after every callback the announcement runs — so an edit is
    /// only ever applied to the array its indexes were checked against.
    private func perform(_ plan: ([Element]) -> Edit?) -> Edit? {
        guard Object.isObservationBridged else { return announcedPerform(plan) }
        ObservationBridge.make(.willSet, object, { keyPath })
        defer { ObservationBridge.make(.didSet, object, { keyPath }) }
        return announcedPerform(plan)
    }

    private func announcedPerform(_ plan: ([Element]) -> Edit?) -> Edit? {
        guard let access else {
            var copy = object[keyPath: keyPath]
            guard let edit = plan(copy) else { return nil }
            edit.apply(&copy)
            object[keyPath: keyPath] = copy
            return edit
        }
        let state = access.state(object)
        // Automatic notification off, or a key the engine could not intern
        // (nothing can observe it): change without announcing.
        guard state & SetterState.manual == 0, state & SetterState.resolved != 0 else {
            return Self.apply(plan, through: access, to: object)
        }
        // Out of range before anybody heard of it: nothing to announce.
        guard plan(access.read(object)) != nil else { return nil }
        let key = SetterState.key(state)
        let probe = SetterState.probe(state)
        // Dependent keys hear first (their prior observers may change the
        // array), and always hear the end of the change, made or not.
        let dependents =
            state & SetterState.hasDependents != 0 ? Dependencies.willChange(of: key, on: object) : nil
        defer { if let dependents { Dependencies.didChange(dependents) } }
        guard Engine.hasObservers(probe) else { return Self.apply(plan, through: access, to: object) }
        let address = Engine.address(object)
        if Engine.hasPriorObservers(probe) {
            // Planned again: a dependent key's prior observer may have changed the array.
            guard let announced = plan(access.read(object)) else { return nil }
            Engine.announce(
                prior: true, object: address, key: key, kind: announced.kind, old: announced.old,
                new: nil as [Element]?, indexes: announced.indexes)
            guard let edit = Self.apply(plan, through: access, to: object) else {
                // The prior observers left the indexes out of range: nothing
                // changes, and the pair opened above is closed with the array
                // as it stands.
                let current = access.read(object)
                Engine.announce(
                    prior: false, object: address, key: key, kind: .setting, old: current,
                    new: current, indexes: [])
                return nil
            }
            Self.announce(edit, object: address, key: key)
            return edit
        }
        guard let edit = Self.apply(plan, through: access, to: object) else { return nil }
        Self.announce(edit, object: address, key: key)
        return edit
    }

    /// Plans against the stored array and applies the edit in the same access.
    private static func apply(
        _ plan: ([Element]) -> Edit?, through access: StorageAccessBase<[Element]>, to object: Object
    ) -> Edit? {
        var made: Edit?
        access.modify(object) { array in
            made = plan(array)
            made?.apply(&array)
        }
        return made
    }

    /// Announces the did-change of `edit`.
    private static func announce(_ edit: Edit, object: UnsafeRawPointer, key: EngineKey) {
        Engine.announce(
            prior: false, object: object, key: key, kind: edit.kind, old: edit.old, new: edit.new,
            indexes: edit.indexes)
    }
}

extension KeyValueObservable {
    /// A mutator that changes the `@ObservedArray` property at `keyPath` and
    /// announces insertions, removals and replacements with their indexes.
    ///
    /// - Parameter keyPath: An `@ObservedArray` property of this object.
    /// - Returns: A mutator bound to this object; cheap to create, use it
    ///   immediately (`account.mutableArray(\.transactions).append(t)`).
    public func mutableArray<Element>(
        _ keyPath: ReferenceWritableKeyPath<Self, [Element]>
    ) -> ObservedArrayMutator<Self, Element> {
        let resolved = try? KeyPathRegistry.resolve(keyPath, on: self)
        let access = resolved?.property?.storageAccess as? StorageAccessBase<[Element]>
        return ObservedArrayMutator(object: self, keyPath: keyPath, access: access)
    }
}

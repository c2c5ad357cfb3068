/// Makes an array property of a ``KeyValueObservable`` class observable as a
/// to-many relationship: insertions, removals and replacements are announced
/// with their indexes.
///
/// ```swift
/// final class Account: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
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
        // Always inlined so the key paths fold into field accesses; see Observed.
        @inline(__always) get {
            if Probe.isActive {
                Probe.record(
                    object, storage: Self.self, state: object[keyPath: storageKeyPath].state,
                    offset: { Engine.offset(of: storageKeyPath, in: object) },
                    keyPath: { wrappedKeyPath })
            }
            if Object.isObservationBridged { ObservationBridge.make(.access, object, { wrappedKeyPath }) }
            return object[keyPath: storageKeyPath].storage
        }
        @inline(__always) set {
            let state = object[keyPath: storageKeyPath].state
            if Object.isObservationBridged {
                ObservationBridge.make(.willSet, object, { wrappedKeyPath })
                notifyingSet(object, Engine.offset(of: storageKeyPath, in: object), newValue, state: state)
                ObservationBridge.make(.didSet, object, { wrappedKeyPath })
                return
            }
            // Fast path: resolved, automatic, no dependents, nobody observing
            // the key on any object (the key's probe: one load, no call).
            // Kept this small so that it inlines into loops; an object never
            // observed is told apart in the slow path.
            if state & SetterState.flags == SetterState.resolved,
                !Engine.hasObservers(SetterState.probe(state))
            {
                object[keyPath: storageKeyPath].storage = newValue
                return
            }
            // The wrapper's offset folds to a constant; the slow path is
            // outlined so the fast path needs no stack frame.
            notifyingSet(object, Engine.offset(of: storageKeyPath, in: object), newValue, state: state)
        }
    }
}

extension ObservedArray: Sendable where Element: Sendable {}

extension ObservedArray: NotifyingStorage {
    @usableFromInline
    static func storageAccess<Object: KeyValueObservable>(
        in _: Object.Type, offset: Int
    ) -> AnyObject? {
        ArrayStorageAccess<Object, Element>(offset: offset)
    }
}

/// Raw access to an `@ObservedArray`'s storage, type-erased over the declaring class.
@usableFromInline
class ArrayStorageAccessBase<Element>: @unchecked Sendable {
    func modify(_ object: AnyObject, _ body: (inout [Element]) -> Void) { fatalError("abstract") }
    func read(_ object: AnyObject) -> [Element] { fatalError("abstract") }
    /// The setter state (resolving the key on first use).
    func state(_ object: AnyObject) -> UInt64 { fatalError("abstract") }
}

@usableFromInline
final class ArrayStorageAccess<Object: KeyValueObservable, Element>: ArrayStorageAccessBase<Element>,
    @unchecked Sendable
{
    /// Byte offset of the `ObservedArray<Element>` storage in an `Object`.
    let offset: Int

    @usableFromInline
    init(offset: Int) {
        self.offset = offset
    }


    /// The wrapper inside `object` (registration and mutator paths only).
    private func wrapper(_ object: AnyObject) -> UnsafeMutablePointer<ObservedArray<Element>> {
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
            .advanced(by: offset)
            .assumingMemoryBound(to: ObservedArray<Element>.self)
    }

    override func modify(_ object: AnyObject, _ body: (inout [Element]) -> Void) {
        withExtendedLifetime(object) { body(&wrapper(object).pointee.storage) }
    }

    override func read(_ object: AnyObject) -> [Element] {
        withExtendedLifetime(object) { wrapper(object).pointee.storage }
    }

    override func state(_ object: AnyObject) -> UInt64 {
        withExtendedLifetime(object) {
            var state = wrapper(object).pointee.state
            if state & (SetterState.resolved | SetterState.manual) == 0 {
                state = SetterState.resolve(
                    unsafeDowncast(object, to: Object.self), storage: ObservedArray<Element>.self,
                    offset: offset)
                wrapper(object).pointee.state = state
            }
            return state
        }
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
/// If the key path is not an `@ObservedArray` property, the mutator falls back
/// to assigning the whole array through the key path (a ``ChangeKind/setting``
/// if the property is `@Observed`).
public struct ObservedArrayMutator<Object: KeyValueObservable, Element> {
    let object: Object
    let keyPath: ReferenceWritableKeyPath<Object, [Element]>
    let access: ArrayStorageAccessBase<Element>?

    init(object: Object, keyPath: ReferenceWritableKeyPath<Object, [Element]>, access: ArrayStorageAccessBase<Element>?) {
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
    /// nothing, for an index out of range.
    @discardableResult
    public func insert(_ element: Element, at index: Int) -> Bool {
        insert(contentsOf: [element], at: index)
    }

    /// Inserts `elements` starting at `index` (`0...count`). Returns `false`,
    /// changing nothing, for an index out of range.
    @discardableResult
    public func insert(contentsOf elements: [Element], at index: Int) -> Bool {
        guard index >= 0, index <= count else { return false }
        if elements.isEmpty { return true }
        let indexes = Array(index..<(index + elements.count))
        mutate(kind: .insertion, indexes: indexes, old: nil, new: elements) {
            $0.insert(contentsOf: elements, at: index)
        }
        return true
    }

    /// Removes and returns the element at `index`; `nil`, changing nothing, when out of range.
    @discardableResult
    public func remove(at index: Int) -> Element? {
        let current = elements
        guard index >= 0, index < current.count else { return nil }
        let removed = current[index]
        mutate(kind: .removal, indexes: [index], old: [removed], new: nil) { $0.remove(at: index) }
        return removed
    }

    /// Removes the elements at `indexes` (any order, duplicates ignored). Returns
    /// `false`, changing nothing, if any index is out of range.
    @discardableResult
    public func remove(at indexes: [Int]) -> Bool {
        let current = elements
        let sorted = Array(Set(indexes)).sorted()
        guard sorted.allSatisfy({ $0 >= 0 && $0 < current.count }) else { return false }
        if sorted.isEmpty { return true }
        let removed = sorted.map { current[$0] }
        mutate(kind: .removal, indexes: sorted, old: removed, new: nil) { array in
            for index in sorted.reversed() { array.remove(at: index) }
        }
        return true
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

    /// Replaces the element at `index`. Returns `false`, changing nothing, when out of range.
    @discardableResult
    public func replace(at index: Int, with element: Element) -> Bool {
        let current = elements
        guard index >= 0, index < current.count else { return false }
        mutate(kind: .replacement, indexes: [index], old: [current[index]], new: [element]) {
            $0[index] = element
        }
        return true
    }

    private func mutate(
        kind: ChangeKind, indexes: [Int], old: [Element]?, new: [Element]?,
        _ body: (inout [Element]) -> Void
    ) {
        guard let access else {
            var copy = object[keyPath: keyPath]
            body(&copy)
            object[keyPath: keyPath] = copy
            return
        }
        let state = access.state(object)
        if state & SetterState.manual != 0 {
            access.modify(object, body)
            return
        }
        ChangeAnnouncement.perform(on: object, state: state) {
        } announce: { prior, key, address, _ in
            Engine.announce(
                prior: prior, object: address, key: key, kind: kind, old: old,
                new: prior ? nil : new, indexes: indexes)
        } change: {
            access.modify(object, body)
        }
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
        let access = resolved?.property?.storageAccess as? ArrayStorageAccessBase<Element>
        return ObservedArrayMutator(object: self, keyPath: keyPath, access: access)
    }
}

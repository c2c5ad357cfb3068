/// Makes a set property of a ``KeyValueObservable`` class observable as an
/// unordered to-many relationship, as Apple KVO does for `NSSet` properties:
/// mutations are announced with the members they added and removed.
///
/// ```swift
/// final class Team: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     static var observableKeyPaths: [String: AnyKeyPath] { ["members": \Team.members] }
///     @ObservedSet var members: Set<String> = []
/// }
/// team.mutableSet(\.members).insert("ada")          // kind .insertion, new ["ada"]
/// team.mutableSet(\.members).subtract(["ada"])      // kind .removal, old ["ada"]
/// team.members = ["grace"]                          // kind .setting
/// ```
///
/// Assigning the property (including in-place mutation such as
/// `team.members.insert(x)`, which Swift performs as get + set) announces a
/// ``ChangeKind/setting`` with the whole old and new sets. Mutations made
/// through ``KeyValueObservable/mutableSet(_:)`` announce
/// ``ChangeKind/insertion``, ``ChangeKind/removal`` or
/// ``ChangeKind/replacement`` whose values are the *members* they touched:
/// the removed members as `oldValue`, the added ones as `newValue` (as Apple's
/// `NSKeyValueChangeOldKey` / `NewKey` for `mutableSetValueForKey:`); a change
/// carries no indexes. Every mutation notifies, also one that changes nothing
/// (its sets are then empty), as Apple KVO does.
///
/// Thread safety: as for ``Observed``, concurrent mutations of one object's
/// property need your own synchronization.
@propertyWrapper
public struct ObservedSet<Element: Hashable> {
    @usableFromInline
    var storage: Set<Element>

    @usableFromInline
    var state: UInt64

    /// Creates the storage with an initial set.
    @inlinable
    public init(wrappedValue: Set<Element>) {
        self.storage = wrappedValue
        self.state = 0
    }

    /// Creates the storage, optionally opting the property out of automatic
    /// notification (see <doc:ManualNotification>).
    @inlinable
    public init(wrappedValue: Set<Element>, notifiesAutomatically: Bool) {
        self.storage = wrappedValue
        self.state = notifiesAutomatically ? 0 : SetterState.manual
    }

    @available(*, unavailable, message: "@ObservedSet is only available on properties of classes conforming to KeyValueObservable")
    public var wrappedValue: Set<Element> {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The property's value, reached through the enclosing object (the
    /// compiler calls this for every access).
    @inlinable
    public static subscript<Object: KeyValueObservable>(
        _enclosingInstance object: Object,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Set<Element>>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, ObservedSet<Element>>
    ) -> Set<Element> {
        @inline(__always) get { Self.value(in: object, wrapped: wrappedKeyPath, storage: storageKeyPath) }
        @inline(__always) set { Self.assign(newValue, in: object, wrapped: wrappedKeyPath, storage: storageKeyPath) }
    }
}

extension ObservedSet: Sendable where Element: Sendable {}

extension ObservedSet: NotifyingStorage {
    @usableFromInline
    static func storageAccess<Object: KeyValueObservable>(
        in _: Object.Type, offset: Int
    ) -> AnyObject? {
        StorageAccess<Object, ObservedSet<Element>>(offset: offset)
    }
}

/// Mutates an ``ObservedSet`` property and announces each mutation with the
/// members it added and removed. Obtain one with
/// ``KeyValueObservable/mutableSet(_:)``.
///
/// If the key path is not an `@ObservedSet` property, the mutator falls back
/// to assigning the whole set through the key path (a ``ChangeKind/setting``
/// if the property is `@Observed`).
public struct ObservedSetMutator<Object: KeyValueObservable, Element: Hashable> {
    let object: Object
    let keyPath: ReferenceWritableKeyPath<Object, Set<Element>>
    let access: StorageAccessBase<Set<Element>>?

    /// The current members.
    public var members: Set<Element> { object[keyPath: keyPath] }

    /// The number of members.
    public var count: Int { members.count }

    /// Inserts `member`: an ``ChangeKind/insertion`` of the members added
    /// (none if it was there).
    public func insert(_ member: Element) { formUnion([member]) }

    /// Removes `member`: a ``ChangeKind/removal`` of the members removed.
    public func remove(_ member: Element) { subtract([member]) }

    /// Adds `other`'s members (Apple's union mutation): an insertion.
    public func formUnion<S: Sequence>(_ other: S) where S.Element == Element {
        let other = Set(other)
        mutate(kind: .insertion) { $0.formUnion(other) }
    }

    /// Removes `other`'s members (Apple's minus mutation): a removal.
    public func subtract<S: Sequence>(_ other: S) where S.Element == Element {
        let other = Set(other)
        mutate(kind: .removal) { $0.subtract(other) }
    }

    /// Keeps only members also in `other` (Apple's intersect mutation): a removal.
    public func formIntersection<S: Sequence>(_ other: S) where S.Element == Element {
        let other = Set(other)
        mutate(kind: .removal) { $0.formIntersection(other) }
    }

    /// Removes every member: a removal.
    public func removeAll() { mutate(kind: .removal) { $0.removeAll() } }

    /// Replaces the members with `members` (Apple's set mutation): a
    /// ``ChangeKind/replacement`` of the members removed and added.
    public func replaceAll<S: Sequence>(with members: S) where S.Element == Element {
        let members = Set(members)
        mutate(kind: .replacement) { $0 = members }
    }

    private func mutate(kind: ChangeKind, _ body: (inout Set<Element>) -> Void) {
        guard Object.isObservationBridged else { return announcedMutation(kind: kind, body) }
        ObservationBridge.make(.willSet, object, { keyPath })
        announcedMutation(kind: kind, body)
        ObservationBridge.make(.didSet, object, { keyPath })
    }

    private func announcedMutation(kind: ChangeKind, _ body: (inout Set<Element>) -> Void) {
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
        // The prior notification carries the members the mutation would
        // remove from the set as it is then; the change itself is measured
        // on the set as it is when it is made (a prior observer may have
        // changed it meanwhile), and that is what the did-change carries.
        var made = (removed: Set<Element>(), added: Set<Element>())
        ChangeAnnouncement.perform(on: object, state: state) {
            Self.delta(of: access.read(object), body).removed
        } announce: { prior, key, address, plannedRemoval in
            Engine.announce(
                prior: prior, object: address, key: key, kind: kind,
                old: kind == .insertion ? nil : (prior ? plannedRemoval : made.removed),
                new: prior || kind == .removal ? nil : made.added, indexes: [])
        } change: {
            access.modify(object) { members in
                made = Self.delta(of: members, body)
                body(&members)
            }
        }
    }

    /// The members `body` would remove from and add to `members`.
    private static func delta(
        of members: Set<Element>, _ body: (inout Set<Element>) -> Void
    ) -> (removed: Set<Element>, added: Set<Element>) {
        var after = members
        body(&after)
        return (members.subtracting(after), after.subtracting(members))
    }
}

extension KeyValueObservable {
    /// A mutator that changes the `@ObservedSet` property at `keyPath` and
    /// announces insertions, removals and replacements with the members they
    /// touched.
    ///
    /// - Parameter keyPath: An `@ObservedSet` property of this object.
    /// - Returns: A mutator bound to this object; cheap to create, use it
    ///   immediately (`team.mutableSet(\.members).insert(m)`).
    public func mutableSet<Element>(
        _ keyPath: ReferenceWritableKeyPath<Self, Set<Element>>
    ) -> ObservedSetMutator<Self, Element> {
        let resolved = try? KeyPathRegistry.resolve(keyPath, on: self)
        let access = resolved?.property?.storageAccess as? StorageAccessBase<Set<Element>>
        return ObservedSetMutator(object: self, keyPath: keyPath, access: access)
    }

    /// A mutator for the `@ObservedSet` property `key`, as Apple's
    /// `mutableSetValue(forKey:)`.
    ///
    /// - Throws: ``KVOError/unknownKey``; ``KVOError/typeMismatch`` if the key
    ///   is not a set of `Element`.
    public func mutableSetValue<Element>(
        forKey key: String, of _: Element.Type
    ) throws(KVOError) -> ObservedSetMutator<Self, Element> {
        // Resolved on the static type: the mutator is typed by it (a
        // reference of a base class type reaches the base class's keys).
        try KeyValueCoding.checkSingle(key, advice: "ask the object its links lead to")
        let path = try KeyValueCoding.path(key, on: Self.self)
        guard !path.isDependent else {
            throw KVOError(.unsupportedKeyPath, detail: "`\(key)` is a dependent key: it is computed, not mutated")
        }
        guard let keyPath = path.keyPath as? ReferenceWritableKeyPath<Self, Set<Element>> else {
            throw KVOError(
                .typeMismatch,
                detail: "`\(key)` holds \(_typeName(type(of: path.keyPath).valueType, qualified: false)), "
                    + "not Set<\(Element.self)>")
        }
        return mutableSet(keyPath)
    }
}

import Synchronization

/// A class whose `@Observed` and `@ObservedArray` properties can be observed.
///
/// Conforming costs one line besides the conformance: a registrar that
/// removes every observation of the object when it deinitializes.
///
/// ```swift
/// final class Account: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     @Observed var name = ""
///     @Observed var balance = 0.0
///     @ObservedArray var transactions: [Transaction] = []
/// }
///
/// let token = account.observe(\.name, options: [.old, .new]) { account, change in
///     print(change.oldValue!, "→", change.newValue!)
/// }
/// ```
///
/// ## Dependent keys
/// Declare computed properties and the keys they are computed from in
/// ``dependentKeyPaths``; a change of any of them notifies observers of the
/// computed property, with its value read before and after the change:
///
/// ```swift
/// final class Person: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     @Observed var firstName = ""
///     @Observed var lastName = ""
///     var fullName: String { "\(firstName) \(lastName)" }
///     static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
///         [\Person.fullName: [\Person.firstName, \Person.lastName]]
///     }
/// }
/// ```
/// Observe a dependent key with the same key path as declared (the declaring
/// class as root).
///
/// ## Object death
/// When the object deinitializes, its ``kvoRegistrar`` removes every
/// observation of it at once: no later change reaches them, and a new object
/// at the same address sees none of them.
public protocol KeyValueObservable: AnyObject, SendableMetatype {
    /// The object's observation registrar: declare it as
    /// `let kvoRegistrar = KVORegistrar()`.
    var kvoRegistrar: KVORegistrar { get }

    /// Computed keys and the keys they are computed from (default: none).
    /// Both sides are key paths rooted in the declaring class.
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { get }
}

extension KeyValueObservable {
    /// No dependent keys.
    public static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [:] }
}

/// Removes every observation of its owner when the owner deinitializes.
///
/// Each ``KeyValueObservable`` object stores its own:
/// `let kvoRegistrar = KVORegistrar()`. It costs one small allocation per
/// object; an object that was never observed does no extra work when it dies.
/// Thread-safe.
///
/// Its deinitialization is what announces the owner's death, so never share
/// one between objects or keep a reference to it beyond its owner's life.
public final class KVORegistrar: Sendable {
    /// The owner's address, stored when it is first observed.
    private let ownerAddress = Atomic<UInt>(0)
    private let deathHandlers = LockedState<[UInt64: @Sendable () -> Void]>([:])
    private let nextHandlerID = Atomic<UInt64>(1)

    /// Creates a registrar for the object that stores it.
    public init() {}

    /// Notes the owner's identity; called on every registration involving it.
    @usableFromInline
    func attach(_ owner: AnyObject) {
        let address = Engine.address(of: owner)
        if ownerAddress.load(ordering: .relaxed) != address {
            ownerAddress.store(address, ordering: .relaxed)
        }
    }

    /// Runs `handler` when the owner dies; returns an id for ``removeDeathHandler(_:)``.
    func addDeathHandler(_ handler: @escaping @Sendable () -> Void) -> UInt64 {
        let id = nextHandlerID.add(1, ordering: .relaxed).oldValue
        deathHandlers.withLock { $0[id] = handler }
        return id
    }

    func removeDeathHandler(_ id: UInt64) {
        _ = deathHandlers.withLock { $0.removeValue(forKey: id) }
    }

    deinit {
        let address = ownerAddress.load(ordering: .relaxed)
        if address != 0 { Engine.unobserveObject(address: address) }
        let handlers = deathHandlers.withLock { handlers in
            defer { handlers = [:] }
            return Array(handlers.values)
        }
        for handler in handlers { handler() }
    }
}

// MARK: - Observation

extension KeyValueObservable {
    /// Observes the value at `keyPath`, calling `changeHandler` on every change
    /// until the returned token is invalidated or deinitialized.
    ///
    /// - Parameters:
    ///   - keyPath: An `@Observed`/`@ObservedArray` property, a key declared in
    ///     ``dependentKeyPaths``, or a chain of `@Observed` properties across
    ///     objects (`\.account.name`: replacing `account` notifies with a
    ///     ``ChangeKind/setting`` whose values are read through the whole path,
    ///     and moves the observation to the new account; optional links such
    ///     as `\.account?.name` are followed while they are non-nil). A
    ///     computed property that reads observed properties is none of these
    ///     unless declared in ``dependentKeyPaths``, and is refused.
    ///   - options: What the changes carry and whether an initial and prior
    ///     notifications are delivered (``ObservingOptions``).
    ///   - changeHandler: Called synchronously on the thread that made the
    ///     change (during this call for `.initial`), with no lock held: it may
    ///     observe, unobserve and change values. It must be `@Sendable` and
    ///     nonisolated: changes happen on any thread, so an actor-isolated
    ///     closure (e.g. a `@MainActor` view model's) is rejected at compile
    ///     time; hop explicitly (`Task { @MainActor in … }`) or consume
    ///     ``values(for:bufferingPolicy:)`` from the actor.
    /// - Returns: The observation. Keep it: the observation ends when it is
    ///   invalidated or deinitialized. The observed object is not retained.
    /// - Throws: ``KVOError/unsupportedKeyPath`` for a key path SwiftKVO
    ///   cannot observe, ``KVOError/forceUnwrappedKeyPath`` for one with a
    ///   `!` link, ``KVOError/dependencyCycle`` for a dependent key computed
    ///   from itself, ``KVOError/outOfMemory``. Nothing is registered then,
    ///   and `changeHandler` is never called.
    ///
    /// Thread-safe; registration never blocks notification on other threads.
    /// Cost: amortized O(1) in the number of observers of the key.
    @inlinable
    public func observe<Value>(
        _ keyPath: KeyPath<Self, Value>,
        options: ObservingOptions = [],
        changeHandler: consuming @escaping @Sendable (Self, ObservedChange<Value>) -> Void
    ) throws(KVOError) -> ObservationToken {
        let resolved = try KeyPathRegistry.resolve(keyPath, on: self)
        switch resolved.kind {
        case .property, .dependent:
            let box = HandlerObservation(
                unmanagedKeyPath: resolved.unmanagedKeyPath,
                readsInitialValue: options.contains(.new), handler: changeHandler)
            return try Deliveries.register(self, key: resolved.key, options: options, box: box)
        case .chain:
            return try Deliveries.observeChain(
                self, keyPath: keyPath, resolved: resolved, options: options, handler: changeHandler)
        }
    }
}

/// Registration and delivery helpers, specialized where they are inlined.
@usableFromInline
enum Deliveries {
    /// Delivers a change that is not ``EngineChange/isPlain``. Out of line, so
    /// the fast path of a delivery closure saves no registers for it.
    @inlinable @inline(never)
    static func deliverGeneral<Object: AnyObject, Value>(
        _ change: EngineChange, of object: Object, keyPath: KeyPath<Object, Value>,
        readsInitialValue: Bool, unmanagedKeyPath: Unmanaged<AnyKeyPath>,
        to handler: (Object, ObservedChange<Value>) -> Void
    ) {
        handler(
            object,
            ObservedChange(
                delivered: change, of: object, keyPath: keyPath,
                readsInitialValue: readsInitialValue, unmanagedKeyPath: unmanagedKeyPath))
    }

    /// Observes a key-path chain.
    @usableFromInline
    static func observeChain<Root: KeyValueObservable, Value>(
        _ root: Root, keyPath: KeyPath<Root, Value>, resolved: ResolvedKeyPath,
        options: ObservingOptions, handler: @escaping @Sendable (Root, ObservedChange<Value>) -> Void
    ) throws(KVOError) -> ObservationToken {
        try KeyPathChain<Root, Value>.observe(
            root, keyPath: keyPath, resolved: resolved, options: options, handler: handler)
    }

    /// Registers `box` for `key` of `object` and wraps it in a token. Takes
    /// over the caller's reference to `box`: only the token can remove the
    /// observation, and `object` is held for the call, as
    /// ``Engine/observe(object:key:options:owner:box:)`` requires.
    @inlinable
    static func register<Object: KeyValueObservable>(
        _ object: Object, key: EngineKey, options: ObservingOptions,
        box: consuming EngineObservation
    ) throws(KVOError) -> ObservationToken {
        object.kvoRegistrar.attach(object)
        return ObservationToken(
            engineToken: try Engine.observe(
                object: Engine.address(object), key: key, options: options, owner: nil, box: box))
    }
}

// MARK: - Manual notification

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

    /// The key a manual announcement for `keyPath` notifies: a property or a
    /// dependent key; `nil` (the announcement is a no-op) for anything else.
    static func key<Root: KeyValueObservable, Value>(
        _ keyPath: KeyPath<Root, Value>, on object: Root
    ) -> ResolvedKeyPath? {
        guard let resolved = try? KeyPathRegistry.resolve(keyPath, on: object),
            resolved.kind != .chain
        else { return nil }
        return resolved
    }
}

/// The box of a token observation: the handler and what its changes are built
/// from. Its delivery function captures nothing (it reads these fields from
/// the box it is handed), so a delivery is one direct call into it.
@usableFromInline
final class HandlerObservation<Object: AnyObject, Value>: EngineObservation, @unchecked Sendable {
    @usableFromInline
    let handler: @Sendable (Object, ObservedChange<Value>) -> Void
    /// The registry's key path (immortal), equal to the observed one and so
    /// of its type: held without a reference count.
    @usableFromInline
    let unmanagedKeyPath: Unmanaged<AnyKeyPath>
    /// The observation asked for `.new`: an initial notification reads the value.
    @usableFromInline
    let readsInitialValue: Bool

    @inlinable
    init(
        unmanagedKeyPath: Unmanaged<AnyKeyPath>, readsInitialValue: Bool,
        handler: @escaping @Sendable (Object, ObservedChange<Value>) -> Void
    ) {
        self.handler = handler
        self.unmanagedKeyPath = unmanagedKeyPath
        self.readsInitialValue = readsInitialValue
        super.init { change, box in
            let box = unsafeDowncast(box, to: HandlerObservation<Object, Value>.self)
            guard change.isPlain else { return box.deliverGeneral(change) }
            change.withObject(as: Object.self) { object in
                box.handler(object, ObservedChange(plain: change, keyPath: box.unmanagedKeyPath))
            }
        }
    }

    /// Delivers a change that is not ``EngineChange/isPlain``; out of line.
    @inlinable @inline(never)
    func deliverGeneral(_ change: EngineChange) {
        change.withObject(as: Object.self) { object in
            Deliveries.deliverGeneral(
                change, of: object,
                keyPath: unsafeDowncast(
                    unmanagedKeyPath.takeUnretainedValue(), to: KeyPath<Object, Value>.self),
                readsInitialValue: readsInitialValue, unmanagedKeyPath: unmanagedKeyPath,
                to: handler)
        }
    }
}

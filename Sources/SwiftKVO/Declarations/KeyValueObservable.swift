import Synchronization

/// A class whose `@Observed` and `@ObservedArray` properties can be observed.
///
/// Conforming costs one line besides the conformance: a registrar that
/// removes every observation of the object when it deinitializes.
///
/// ```swift
/// final class Account: KeyValueObservable {
///     let kvoRegistrar = KVORegistrar()
///     static var observableKeyPaths: [String: AnyKeyPath] {
///         ["name": \Account.name, "balance": \Account.balance, "transactions": \Account.transactions]
///     }
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
///     static var observableKeyPaths: [String: AnyKeyPath] {
///         ["firstName": \Person.firstName, "lastName": \Person.lastName]
///     }
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
    /// Both sides are key paths rooted in the declaring class (or a
    /// superclass); an entry whose computed key is rooted in any other class
    /// is ignored, and an `@Observed` property declared as a computed key is
    /// refused when observed.
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { get }

    /// What is observable (default: nothing): each `@Observed`,
    /// `@ObservedArray` and `@ObservedSet` property to observe, and each
    /// declared dependent key to reach by name, under its name, as a key path
    /// rooted in the declaring class
    /// (`["name": \Account.name, "balance": \Account.balance]`). The
    /// `@KeyValueObservable` macro writes it; a hand-written class declares
    /// it (a subclass that adds properties overrides a `class var` and
    /// merges its superclass's table).
    ///
    /// Registration decides from the tables alone, before anything is read:
    /// a wrapper the table leaves out, a computed property and a subscript
    /// are refused without their getters running, and a class without a
    /// table has nothing observable. Key-value coding reaches the same names.
    static var observableKeyPaths: [String: AnyKeyPath] { get }

    /// Whether Swift's Observation module can observe the class too: `true`
    /// for an ``ObservationBridged`` class, `false` otherwise. Never implement
    /// it yourself: conform to ``ObservationBridged``.
    static var isObservationBridged: Bool { get }
}

extension KeyValueObservable {
    /// No dependent keys.
    public static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [:] }

    /// No keys by name.
    public static var observableKeyPaths: [String: AnyKeyPath] { [:] }
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
    /// The owner's address, stored when it is first observed (0 until then).
    @usableFromInline
    let ownerAddress = Atomic<UInt>(0)
    /// Handlers to run at the owner's death, and the next handler's id (kept
    /// under the lock: one stored property, not two).
    private let deathHandlers = LockedState<(handlers: [UInt64: @Sendable () -> Void], nextID: UInt64)>(
        ([:], 1))

    /// Creates a registrar for the object that stores it.
    public init() {}

    /// Whether the owner may be observed: it was, at some point. A setter of
    /// an object never observed skips the engine even while its property is
    /// observed on other objects (one relaxed load). Never false while an
    /// observation of the owner exists: every registration attaches the
    /// owner before it is installed, so a change ordered after the
    /// registration sees the address.
    @inlinable @inline(__always)
    var mayBeObserved: Bool { ownerAddress.load(ordering: .relaxed) != 0 }

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
        deathHandlers.withLock { state in
            let id = state.nextID
            state.nextID &+= 1  // 584 years at one a nanosecond; then it wraps past ids long gone
            state.handlers[id] = handler
            return id
        }
    }

    func removeDeathHandler(_ id: UInt64) {
        _ = deathHandlers.withLock { $0.handlers.removeValue(forKey: id) }
    }

    deinit {
        let address = ownerAddress.load(ordering: .relaxed)
        if address != 0 { Engine.unobserveObject(address: address) }
        let handlers = deathHandlers.withLock { state in
            defer { state.handlers = [:] }
            return Array(state.handlers.values)
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
    ///     unless declared in ``dependentKeyPaths``, and is refused; so are
    ///     subscripts and links through structs or existentials, decided
    ///     from the declarations without evaluating the key path.
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
    ///   cannot observe (its ``KVOError/detail`` names the part at fault),
    ///   ``KVOError/forceUnwrappedKeyPath`` for one with a
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

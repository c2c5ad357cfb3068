import Synchronization

/// Observes ``KeyValueObservable`` objects on behalf of an observer, for the
/// observer's lifetime — Facebook's KVOController for Swift.
///
/// ```swift
/// final class AccountViewModel {
///     lazy var kvo = KVOController(observer: self)
///     func bind(_ account: Account) {
///         kvo.observe(account, \.name, options: [.initial, .new]) { viewModel, account, change in
///             viewModel.render(name: change.newValue!)
///         }
///         kvo.observe(account, \.balance, options: .new, action: AccountViewModel.balanceDidChange)
///     }
///     func balanceDidChange(_ change: ObservedChange<Double>) { … }
/// }
/// ```
///
/// - The observer is held weakly. Once it is gone its blocks are never called
///   again; a notification that finds it gone skips it and removes the
///   observation (deferred, without taking any lock on the notification path).
///   Once the engine releases that observation, the block and what it
///   captures are released and the controller forgets the entry (and with
///   it a retained observed object), even while the controller lives on.
/// - Everything the controller registered is removed when it deinitializes
///   (typically with its observer).
/// - With `retainsObserved: true` (the default) the controller keeps observed
///   objects alive until they are unobserved; observing the observer itself
///   then creates a reference cycle (as in KVOController) — use
///   `retainsObserved: false` for that. With `retainsObserved: false` observed
///   objects are held weakly, and an observed object's death removes its
///   observations.
/// - Observing the same property of the same object twice is a no-op that
///   reports "already observing": it returns `false` (it does not throw),
///   also through different key paths naming it (`\SavingsAccount.name` and
///   `\BaseAccount.name` for a property declared in `BaseAccount`). Observing
///   `nil` throws ``KVOError/invalidArgument``.
/// - Removals never crash and report what they removed: `unobserve(_:_:)`
///   returns whether it removed an observation, `unobserve(_:)` and
///   ``unobserveAll()`` how many; `false` and 0 mean "not found" (never
///   observed, already removed, or gone with a dead observer or object).
///
/// ## Callbacks and isolation
/// Blocks and nonisolated actions run synchronously on the thread that made
/// the change (during `observe` for `.initial`), with no lock held. Blocks must
/// be `@Sendable` and nonisolated, so a block that touches an actor-isolated
/// observer (a `@MainActor` view model) is rejected at compile time rather
/// than called off its actor: hop explicitly inside the block
/// (`Task { @MainActor in … }`) or consume
/// ``KeyValueObservable/values(for:bufferingPolicy:)`` on the actor.
/// Target-actions naming a `@MainActor` method are delivered by hopping: on
/// the main actor, asynchronously, in order. Target-actions naming a method
/// isolated to another global actor are refused at registration with
/// ``KVOError/isolatedAction``.
///
/// ## Cost
/// Each delivery loads the weak observer strongly for the duration of the
/// block: one retain and one release of the observer, atomic operations on its
/// side table that token observation (``KeyValueObservable/observe(_:options:changeHandler:)``)
/// does not pay. That is what guarantees a block never runs with an observer
/// whose deinitialization has begun. An action given as an unbound method
/// reference also builds the bound method (a small allocation) on each delivery.
///
/// ## Thread safety
/// Every method may be called from any thread, including from inside a block.
public final class KVOController<Observer: AnyObject>: @unchecked Sendable {
    /// The observer passed to blocks and actions; `nil` once it deinitialized.
    public private(set) weak var observer: Observer?

    /// Whether observed objects are retained until unobserved.
    public let retainsObserved: Bool

    // Not nested types: nested in this generic class they would be generic
    // too, and every registration would look their metadata up at run time.
    typealias Entry = KVOControllerEntry
    typealias ObjectRecord = KVOControllerRecord
    typealias Removal = KVOControllerRemoval

    private let records = LockedState(KVOControllerRecords())

    /// Creates a controller for `observer`.
    ///
    /// - Parameters:
    ///   - observer: Passed to every block and action; held weakly.
    ///   - retainsObserved: Whether observed objects are retained until
    ///     unobserved (default `true`, like `KVOController`'s `FBKVOController`
    ///     default); with `false` they are held weakly.
    public init(observer: Observer, retainsObserved: Bool = true) {
        self.observer = observer
        self.retainsObserved = retainsObserved
    }

    deinit {
        unobserveAll()
    }

    // MARK: Observing

    /// Observes `keyPath` of `object`, calling `block(observer, object, change)`
    /// on every change.
    ///
    /// - Parameters:
    ///   - object: The observed object.
    ///   - keyPath: An observable key path (see ``KeyValueObservable/observe(_:options:changeHandler:)``).
    ///   - options: What changes carry; `.initial` calls the block during this call.
    ///   - block: Called synchronously on the changing thread while the observer lives.
    /// - Returns: `true` if the observation was made; `false` ("already
    ///   observing") if this controller already observes `keyPath` of
    ///   `object`: nothing changes, as in KVOController.
    /// - Throws: ``KVOError/invalidArgument`` for a `nil` object; the
    ///   refusals of ``KeyValueObservable/observe(_:options:changeHandler:)``
    ///   (``KVOError/unsupportedKeyPath`` and the like). Nothing is
    ///   registered then.
    @inlinable
    @discardableResult
    public func observe<Object: KeyValueObservable, Value>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        block: @escaping @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    ) throws(KVOError) -> Bool {
        guard let object else { throw .invalidArgument }
        let resolved = try KeyPathRegistry.resolve(keyPath, on: object)
        guard resolved.kind != .chain else {
            return try observeChain(object, keyPath, resolved: resolved, options: options, block: block)
        }
        let box = Deliveries.controller(
            observer: observer, resolved: resolved, options: options, block: block)
        return try register(object, resolved: resolved, options: options, box: box)
    }

    /// Observes `keyPath` of `object`, calling `action(observer)(change)` — an
    /// unbound method reference such as `ViewModel.balanceDidChange` — on every
    /// change; what the method returns, if anything, is ignored.
    ///
    /// For nonisolated methods: the action runs synchronously on the changing
    /// thread, like a block. (Generic over the method's result so that the
    /// compiler prefers the refusing overload for methods isolated to a global
    /// actor; see <doc:ThreadingAndIsolation>.)
    @inlinable
    @discardableResult
    public func observe<Object: KeyValueObservable, Value, Result>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        action: @escaping @Sendable (Observer) -> (ObservedChange<Value>) -> Result
    ) throws(KVOError) -> Bool {
        try observe(object, keyPath, options: options) { observer, _, change in
            _ = action(observer)(change)
        }
    }

    /// Observes `keyPath` of `object`, calling `action(observer)()` — an
    /// unbound method reference without arguments — on every change; what the
    /// method returns, if anything, is ignored. For nonisolated methods, like
    /// the overload with a change argument.
    @inlinable
    @discardableResult
    public func observe<Object: KeyValueObservable, Value, Result>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        action: @escaping @Sendable (Observer) -> () -> Result
    ) throws(KVOError) -> Bool {
        try observe(object, keyPath, options: options) { observer, _, _ in
            _ = action(observer)()
        }
    }

    /// Observes `keyPath` of `object`, calling the main-actor-isolated method
    /// `action` (e.g. `ViewModel.balanceDidChange` of a `@MainActor` view
    /// model) **on the main actor**: each change is delivered asynchronously,
    /// in order, with the values captured when the change happened.
    ///
    /// Swift accepts an unbound reference to an actor-isolated method where a
    /// nonisolated function is expected (and would then call it off its actor),
    /// so this overload, chosen for `@MainActor` methods, hops instead. Methods
    /// isolated to other global actors are refused
    /// (``KVOError/isolatedAction``).
    @discardableResult
    public func observe<Object: KeyValueObservable, Value>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        action: @escaping @Sendable (Observer) -> @MainActor (ObservedChange<Value>) -> Void
    ) throws(KVOError) -> Bool {
        try observe(object, keyPath, options: options) { observer, _, change in
            let transfer = MainActorTransfer(observer: observer, change: change)
            Task { @MainActor in action(transfer.observer)(transfer.change) }
        }
    }

    /// Observes `keyPath` of `object`, calling the main-actor-isolated method
    /// `action` (no arguments) **on the main actor**, asynchronously and in
    /// order, like the `@MainActor` action overload with a change argument.
    @discardableResult
    public func observe<Object: KeyValueObservable, Value>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        action: @escaping @Sendable (Observer) -> @MainActor () -> Void
    ) throws(KVOError) -> Bool {
        try observe(object, keyPath, options: options) { observer, _, change in
            let transfer = MainActorTransfer(observer: observer, change: change)
            Task { @MainActor in action(transfer.observer)() }
        }
    }

    /// Refuses an action isolated to a global actor other than the main actor
    /// (`@MyActor func didChange(_:)` of the observer): throws
    /// ``KVOError/isolatedAction``, observes nothing and never calls `action`.
    ///
    /// Swift would also convert such a method to the nonisolated action type,
    /// and this controller would then call it on the changing thread, off its
    /// actor. The compiler prefers this overload for methods isolated to any
    /// global actor but the main actor (public or internal, returning nothing
    /// or a `Sendable` value), so they land here instead. It does not hop to
    /// the actor: in Swift 6.3, converting methods of two different global
    /// actors to this parameter type can yield one shared conversion thunk,
    /// so the isolation the action reports may name the wrong actor. Observe
    /// with a block and hop inside it. See <doc:ThreadingAndIsolation>.
    ///
    /// - Throws: Always ``KVOError/isolatedAction``.
    @discardableResult
    public func observe<Object: KeyValueObservable, Value, Result: Sendable>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        action: @escaping @Sendable (Observer) -> @isolated(any) (ObservedChange<Value>) -> Result
    ) throws(KVOError) -> Bool {
        throw .isolatedAction
    }

    /// Refuses an action without arguments isolated to a global actor other
    /// than the main actor, like the overload with a change argument.
    ///
    /// - Throws: Always ``KVOError/isolatedAction``.
    @discardableResult
    public func observe<Object: KeyValueObservable, Value, Result: Sendable>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>, options: ObservingOptions = [],
        action: @escaping @Sendable (Observer) -> @isolated(any) () -> Result
    ) throws(KVOError) -> Bool {
        throw .isolatedAction
    }

    /// Observes several key paths of `object` with one block; each change's
    /// ``ObservedChange/keyPath`` tells which one fired, and its values are the
    /// property's values as `Any`, optionals unwrapped (`nil` for `nil`), as
    /// by name.
    ///
    /// - Returns: How many of the key paths were newly observed (the others
    ///   were observed already).
    /// - Throws: As the single-key-path form, for the first key path that
    ///   cannot be observed. Every key path is checked before any is
    ///   registered: when one is refused, none is observed.
    @discardableResult
    public func observe<Object: KeyValueObservable>(
        _ object: Object?, keyPaths: [PartialKeyPath<Object>], options: ObservingOptions = [],
        block: @escaping @Sendable (Observer, Object, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> Int {
        guard let object else { throw .invalidArgument }
        var openers: [any ControllerKeyPathOpening] = []
        for keyPath in keyPaths {
            guard let opener = keyPath as? any ControllerKeyPathOpening else {
                throw .unsupportedKeyPath
            }
            try opener.check(on: object)
            openers.append(opener)
        }
        var registered = 0
        for opener in openers
        where try opener.register(in: self, object: object, options: options, block: block) {
            registered += 1
        }
        return registered
    }

    // MARK: Unobserving

    /// Stops observing `keyPath` of `object`.
    ///
    /// After it returns no notification that starts later calls the block.
    /// Works from inside the block, including an `.initial` one. A key path
    /// names its property, not its spelling: `\Derived.name` and
    /// `\Base.name` stop the same observation.
    ///
    /// - Returns: `true` if an observation was removed; `false` ("not found")
    ///   if this controller did not observe `keyPath` of `object` — never
    ///   observed, already unobserved, or already removed because the
    ///   observer or the object died. Never crashes.
    @discardableResult
    public func unobserve<Object: KeyValueObservable, Value>(
        _ object: Object?, _ keyPath: KeyPath<Object, Value>
    ) -> Bool {
        guard let object, let resolved = try? KeyPathRegistry.resolve(keyPath, on: object) else {
            return false
        }
        return unobserve(object, key: KVOControllerKey.of(resolved))
    }

    /// Removes the entry filed under `key` for `object`; whether an observation was removed.
    private func unobserve(_ object: AnyObject, key: UInt) -> Bool {
        let address = Engine.address(of: object)
        // Keeps a record taken out of the table alive until after the lock:
        // releasing it may release the observed object, whose deinit may
        // call back into this controller.
        var released: ObjectRecord?
        let removal: Removal? = records.withLock { records in
            guard let record = records[address], record.object === object,
                let entry = record.entries.removeValue(forKey: key)
            else { return nil }
            if record.entries.isEmpty {
                records[address] = nil
                released = record
            }
            return Self.removal(of: entry)
        }
        let removed = removal?.perform() ?? false
        withExtendedLifetime(released) {}
        return removed
    }

    /// Stops observing every key path of `object`; the others stay observed.
    ///
    /// - Returns: How many observations were removed; 0 ("not found") if
    ///   this controller observed nothing of `object` that was still
    ///   registered.
    @discardableResult
    public func unobserve(_ object: AnyObject?) -> Int {
        guard let object else { return 0 }
        let address = Engine.address(of: object)
        // Records taken out of the table stay alive until after the lock (see
        // `unobserve(_:_:)`), and their removals are decided under it.
        var released: ObjectRecord?
        let removals: [Removal] = records.withLock { records in
            guard let record = records[address], record.object === object else { return [] }
            records[address] = nil
            released = record
            return record.entries.values.map(Self.removal(of:))
        }
        let removed = Self.perform(removals)
        withExtendedLifetime(released) {}
        return removed
    }

    /// Stops observing everything this controller observes.
    ///
    /// - Returns: How many observations were removed; 0 ("not found") if
    ///   none was registered.
    @discardableResult
    public func unobserveAll() -> Int {
        var released: [ObjectRecord] = []
        let removals: [Removal] = records.withLock { records in
            released = Array(records.values)
            records = KVOControllerRecords()
            return released.flatMap { $0.entries.values.map(Self.removal(of:)) }
        }
        let removed = Self.perform(removals)
        withExtendedLifetime(released) {}
        return removed
    }

    /// Carries out `removals` (after the lock); returns how many removed something.
    private static func perform(_ removals: [Removal]) -> Int {
        var removed = 0
        for removal in removals where removal.perform() { removed += 1 }
        return removed
    }

    /// The removal of `entry`, decided under the lock.
    private static func removal(of entry: Entry) -> Removal {
        defer { entry.detach() }
        if entry.registering {
            entry.cancelled = true
            // The registering thread (an initial callback) already has the
            // token (`token` reads it there); another thread reads 0 and
            // leaves the removal to it.
            return Removal(token: entry.token, chain: nil, cancelsRegistration: true)
        }
        return Removal(token: entry.token, chain: entry.chain, cancelsRegistration: false)
    }

    // MARK: Internals

    @usableFromInline
    func register<Object: KeyValueObservable, Value>(
        _ object: Object, resolved: ResolvedKeyPath, options: ObservingOptions,
        box: ControllerObservation<Observer, Object, Value>
    ) throws(KVOError) -> Bool {
        let address = Engine.address(of: object)
        let keyID = KVOControllerKey.of(resolved)
        let entry: Entry = box
        entry.file(address: address, key: keyID, records: records)
        var released: [ObjectRecord] = []
        let duplicate: Bool = records.withLock { records in
            var record = records[address]
            if let existing = record, existing.object !== object {
                // A dead object's record (weakly held) at a reused address.
                released.append(existing)
                record = nil
            }
            guard let record else {
                let created = ObjectRecord(object: object, retains: retainsObserved)
                created.entries[keyID] = entry
                records[address] = created
                return false
            }
            // One probe when the key path is new; a duplicate is put back.
            guard let previous = record.entries.updateValue(entry, forKey: keyID) else { return false }
            record.entries[keyID] = previous
            return true
        }
        released.removeAll()
        if duplicate { return false }
        object.kvoRegistrar.attach(object)
        let error: KVOError?
        do {
            _ = try Engine.observe(
                object: Engine.address(object), key: resolved.key, options: options,
                owner: nil, box: box)
            error = nil
        } catch let failure {
            error = failure
        }
        let cancelled: Bool = records.withLock { records in
            entry.registering = false
            if error != nil, let record = records[address], record.entries[keyID] === entry {
                record.entries[keyID] = nil
                if record.entries.isEmpty {
                    records[address] = nil
                    released.append(record)
                }
            }
            return entry.cancelled
        }
        released.removeAll()
        if let error { throw error }
        if cancelled { Engine.unobserve(entry.token) }
        return true
    }

    @usableFromInline
    func observeChain<Object: KeyValueObservable, Value>(
        _ object: Object, _ keyPath: KeyPath<Object, Value>, resolved: ResolvedKeyPath,
        options: ObservingOptions,
        block: @escaping @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    ) throws(KVOError) -> Bool {
        let address = Engine.address(of: object)
        let keyID = KVOControllerKey.of(resolved)
        let entry = KVOControllerChainEntry(keyPath: keyPath)
        entry.file(address: address, key: keyID, records: records)
        // A dead object's record displaced at a reused address is released
        // after the lock, as in `register` (its entries' tokens end chains,
        // which runs engine writers and their release callbacks).
        var released: ObjectRecord?
        let duplicate: Bool = records.withLock { records in
            let current: ObjectRecord
            if let existing = records[address], existing.object === object {
                current = existing
            } else {
                released = records[address]
                current = ObjectRecord(object: object, retains: retainsObserved)
            }
            if current.entries[keyID] != nil { return true }
            current.entries[keyID] = entry
            records[address] = current
            return false
        }
        withExtendedLifetime(released) {}
        if duplicate { return false }
        let outcome = Result { () throws(KVOError) in
            try object.observe(keyPath, options: options) { [weak self] object, change in
                guard let self else { return }
                guard let observer = self.observer else {
                    // The observer is gone: end the chain (and release the
                    // block) rather than keep it registered. A chain's
                    // notifications already take locks and register when an
                    // intermediate is replaced, so this once-only removal
                    // adds no new kind of work.
                    _ = self.unobserve(object, key: keyID)
                    return
                }
                block(observer, object, change)
            }
        }
        let token = try? outcome.get()
        let cancelled: Bool = records.withLock { records in
            entry.registering = false
            entry.chainToken = token
            if token == nil, let record = records[address], record.entries[keyID] === entry {
                record.entries[keyID] = nil
                if record.entries.isEmpty { records[address] = nil }
            }
            return entry.cancelled
        }
        if case .failure(let error) = outcome { throw error }
        if cancelled { token?.invalidate() }
        return true
    }
}

// MARK: - Introspection

extension KVOController: CustomStringConvertible {
    /// The objects the controller observes, those still alive, in no
    /// particular order (KVOController's `description` lists them).
    ///
    /// Takes the controller's lock, never the engine's: notifications are
    /// never held up by it. O(observed objects).
    public var observedObjects: [AnyObject] {
        records.withLock { records in records.values.compactMap(\.object) }
    }

    /// The key paths the controller observes on `object`, in registration order.
    ///
    /// Takes the controller's lock, never the engine's. O(key paths of `object`).
    public func observedKeyPaths(of object: AnyObject) -> [AnyKeyPath] {
        let address = Engine.address(of: object)
        return records.withLock { records in
            guard let record = records[address], record.object === object else { return [] }
            return record.entries.values.compactMap(\.observedKeyPath)
        }
    }

    /// The observer and, per observed object, the key paths observed, spelled
    /// by name: `KVOController<ViewModel>(observer: ViewModel) { Account
    /// 0x…: [\Account.name, \Account.balance] }`.
    public var description: String {
        let observed = records.withLock { records in
            records.values.compactMap { record in
                record.object.map { ($0, record.entries.values.compactMap(\.observedKeyPath)) }
            }
        }
        let objects = observed.map { object, keyPaths in
            "\(type(of: object)) \(String(Engine.address(of: object), radix: 16, uppercase: false)): ["
                + keyPaths.map(KeyPathRegistry.spelling(of:)).joined(separator: ", ") + "]"
        }
        let observerName = observer.map { "\(type(of: $0))" } ?? "nil"
        return "KVOController<\(Observer.self)>(observer: \(observerName)) { "
            + objects.joined(separator: "; ") + " }"
    }
}

/// Opens a `PartialKeyPath` to its value type for ``KVOController/observe(_:keyPaths:options:block:)``.
protocol ControllerKeyPathOpening {
    /// Throws what registering on `object` would refuse.
    func check<Root: KeyValueObservable>(on object: Root) throws(KVOError)

    func register<Observer: AnyObject, Root: KeyValueObservable>(
        in controller: KVOController<Observer>, object: Root, options: ObservingOptions,
        block: @escaping @Sendable (Observer, Root, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> Bool

    /// Unobserves it on `object`; `false` if it was not observed.
    func unregister<Observer: AnyObject, Root: KeyValueObservable>(
        in controller: KVOController<Observer>, object: Root
    ) -> Bool
}

extension KeyPath: ControllerKeyPathOpening {
    func check<R: KeyValueObservable>(on object: R) throws(KVOError) {
        guard let keyPath = self as? KeyPath<R, Value> else { throw .unsupportedKeyPath }
        _ = try KeyPathRegistry.resolve(keyPath, on: object)
    }

    func register<Observer: AnyObject, R: KeyValueObservable>(
        in controller: KVOController<Observer>, object: R, options: ObservingOptions,
        block: @escaping @Sendable (Observer, R, ObservedChange<Any>) -> Void
    ) throws(KVOError) -> Bool {
        guard let keyPath = self as? KeyPath<R, Value> else { throw .unsupportedKeyPath }
        let flattening = Value.self is any OptionalValue.Type
        return try controller.observe(object, keyPath, options: options) { observer, object, change in
            block(observer, object, flattening ? change.flattened() : change.map { $0 as Any })
        }
    }

    func unregister<Observer: AnyObject, R: KeyValueObservable>(
        in controller: KVOController<Observer>, object: R
    ) -> Bool {
        guard let keyPath = self as? KeyPath<R, Value> else { return false }
        return controller.unobserve(object, keyPath)
    }
}

/// Carries an observer and a change (values copied when the change happened)
/// to the main actor for a main-actor-isolated action.
struct MainActorTransfer<Observer: AnyObject, Value>: @unchecked Sendable {
    let observer: Observer
    let change: ObservedChange<Value>
}

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
    /// property's values as `Any`.
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
        let entry = KVOControllerChainEntry()
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

/// How to remove an entry taken out of the table, carried out after the lock.
struct KVOControllerRemoval {
    /// The engine token to remove; 0 for none.
    let token: EngineToken
    let chain: ObservationToken?
    /// The entry was still being registered, and was marked cancelled: its
    /// registering thread removes the observation if this does not.
    let cancelsRegistration: Bool

    /// Carries out the removal; returns whether an observation was removed
    /// (`false` when the engine no longer had it: its observer or its object
    /// died).
    func perform() -> Bool {
        if let chain { return chain.invalidate() }
        if token != 0 { return Engine.unobserve(token) == nil }
        return cancelsRegistration
    }
}

/// One registration of a ``KVOController``, as filed in its table: the
/// engine's box itself (``ControllerObservation``), or a key-path chain's
/// entry (``KVOControllerChainEntry``), which the engine never sees.
///
/// The table holds its entries; the engine holds a box until it releases it
/// (the observation was removed: unobserved, its observer found dead by a
/// dispatch, or its object deinitialized), and that release removes the box
/// from the table if it is still there (``engineReleased()``), so the block
/// and what it captures go with it, even while the controller lives on.
///
/// `@unchecked Sendable`: where it is filed is written once, before the entry
/// is filed or registered; its mutable flags are read and written only under
/// the controller's lock.
@usableFromInline
class KVOControllerEntry: SelfRemovingObservation, @unchecked Sendable {
    // Where the entry is filed: the observed object's address, its key, and
    // the controller's table. Written once by `file(address:key:records:)`.
    @exclusivity(unchecked) private(set) var address: UInt = 0
    @exclusivity(unchecked) private(set) var key: UInt = 0
    @exclusivity(unchecked) private var records: LockedState<KVOControllerRecords>?
    /// Set once the entry left the table, so that its release skips the lock
    /// (a stale `false` only costs the lookup).
    private let detached = Atomic<Bool>(false)
    // The mutable fields below are accessed only under the controller's lock,
    // which is their exclusivity: accesses skip the runtime's dynamic check.
    @exclusivity(unchecked) var registering = true
    @exclusivity(unchecked) var cancelled = false

    @usableFromInline
    override init(deliver: @escaping (EngineChange, EngineObservation) -> Void) {
        super.init(deliver: deliver)
    }

    /// Notes where the entry is filed; called once, before it is filed.
    func file(address: UInt, key: UInt, records: LockedState<KVOControllerRecords>) {
        self.address = address
        self.key = key
        self.records = records
    }

    /// For a key-path chain: the chain's token.
    var chain: ObservationToken? { nil }

    override func engineReleased() { forget() }

    /// Marks the entry as taken out of the table, under the lock: its
    /// release then returns without the lock.
    func detach() { detached.store(true, ordering: .releasing) }

    /// Removes the entry from the table if it is still there, once the engine
    /// released it. Runs where the engine releases observations (after a
    /// registration or removal, outside every engine lock), never on a
    /// notification path. A record left empty is released after the lock:
    /// with it goes a retained observed object, whose deinit may call back
    /// into the controller.
    func forget() {
        guard !detached.load(ordering: .acquiring), let records else { return }
        let released: KVOControllerRecord? = records.withLock { records in
            guard let record = records[address], record.entries[key] === self else { return nil }
            record.entries[key] = nil
            guard record.entries.isEmpty else { return nil }
            records[address] = nil
            return record
        }
        withExtendedLifetime(released) {}
    }
}

/// A key-path chain's entry in a ``KVOController``'s table: the chain is an
/// observation of its own (a token), so the engine never holds this entry.
final class KVOControllerChainEntry: KVOControllerEntry, @unchecked Sendable {
    /// Accessed only under the controller's lock.
    @exclusivity(unchecked) var chainToken: ObservationToken?

    init() {
        super.init { _, _ in }  // never registered, never delivered to
    }

    override var chain: ObservationToken? { chainToken }
}

/// What a ``KVOController`` files an entry under: the observed property, not
/// the key path's spelling. `\Derived.name` and `\Base.name` name the same
/// property (the same engine key), so they share one entry: observing
/// through both is a duplicate, and unobserving through either removes it.
///
/// One word, hashed once: an engine key, shifted and tagged odd, for a
/// property or dependent key; for a key-path chain, which has no single
/// engine key, the address of the interned key path (immortal, so never
/// reused; aligned, so even).
enum KVOControllerKey {
    /// The key `resolved` is filed under.
    static func of(_ resolved: ResolvedKeyPath) -> UInt {
        switch resolved.kind {
        case .property, .dependent:
            UInt(resolved.key) << 1 | 1
        case .chain:
            UInt(bitPattern: ObjectIdentifier(resolved.keyPath))
        }
    }
}

/// What a ``KVOController`` observes on one object: the object (strongly or
/// weakly held) and an entry per observed property.
final class KVOControllerRecord {
    /// The object itself when retained; otherwise a ``WeakObject`` holding
    /// it. One field for both, so that a record is a 48-byte heap block.
    private let reference: AnyObject
    /// Accessed only under the controller's lock (see ``KVOControllerEntry``).
    @exclusivity(unchecked) var entries = KVOControllerEntries()

    /// Holds a weakly referenced observed object.
    private final class WeakObject {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }

    init(object: AnyObject, retains: Bool) {
        reference = retains ? object : WeakObject(object)
    }

    /// The object; `nil` once a weakly held one died.
    var object: AnyObject? {
        // An exact class check, not a cast: no observed object is a
        // `WeakObject` (a private class).
        guard ObjectIdentifier(type(of: reference)) == ObjectIdentifier(WeakObject.self) else {
            return reference
        }
        return unsafeDowncast(reference, to: WeakObject.self).object
    }
}

/// A ``KVOController``'s records, by observed object's address: one inline,
/// the others in a dictionary, used only while more than one object is
/// observed. Most controllers observe one object (a view model its model),
/// and a dictionary of one takes about 112 bytes. An address is filed in at
/// most one of the two.
struct KVOControllerRecords {
    private var single: (address: UInt, record: KVOControllerRecord)?
    private var others: [UInt: KVOControllerRecord] = [:]

    /// Every record.
    var values: [KVOControllerRecord] {
        (single.map { [$0.record] } ?? []) + others.values
    }

    /// The record of the object at `address`; assigning `nil` removes it.
    subscript(address: UInt) -> KVOControllerRecord? {
        get {
            if let single, single.address == address { return single.record }
            return others.isEmpty ? nil : others[address]
        }
        set {
            if let current = single, current.address == address {
                single = newValue.map { (address, $0) }
            } else if (!others.isEmpty && others[address] != nil) || (newValue != nil && single != nil) {
                others[address] = newValue
            } else if let newValue {
                single = (address, newValue)
            }
        }
    }
}

/// One object's entries in a ``KVOController``, each under its
/// ``KVOControllerKey``: the first inline, any others in an array, searched
/// linearly, since one observer observes few properties of one object — O(k)
/// for k observed properties. The usual single entry costs no allocation
/// beyond its record (a dictionary of one took about 112 bytes).
struct KVOControllerEntries {
    private var first: KVOControllerEntry?
    private var rest: [KVOControllerEntry] = []

    var isEmpty: Bool { first == nil }

    /// Every entry, in the order they were filed.
    var values: [KVOControllerEntry] {
        guard let first else { return [] }
        return [first] + rest
    }

    /// The entry filed under `key`; assigning `nil` removes it.
    subscript(key: UInt) -> KVOControllerEntry? {
        get {
            if let first, first.key == key { return first }
            return rest.first { $0.key == key }
        }
        set {
            if let current = first, current.key == key {
                if let newValue {
                    first = newValue
                } else {
                    first = rest.isEmpty ? nil : rest.removeFirst()
                }
            } else if let index = rest.firstIndex(where: { $0.key == key }) {
                if let newValue { rest[index] = newValue } else { rest.remove(at: index) }
            } else if let newValue {
                if first == nil { first = newValue } else { rest.append(newValue) }
            }
        }
    }

    /// Files `entry` under `key`; returns the entry it replaced, if any.
    mutating func updateValue(_ entry: KVOControllerEntry, forKey key: UInt) -> KVOControllerEntry? {
        defer { self[key] = entry }
        return self[key]
    }

    /// Removes and returns the entry filed under `key`, if any.
    mutating func removeValue(forKey key: UInt) -> KVOControllerEntry? {
        defer { self[key] = nil }
        return self[key]
    }
}

extension Deliveries {
    /// A box calling `block(observer, object, change)` while the observer lives.
    @inlinable
    static func controller<Observer: AnyObject, Object: AnyObject, Value>(
        observer: Observer?, resolved: ResolvedKeyPath,
        options: ObservingOptions,
        block: @escaping @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    ) -> ControllerObservation<Observer, Object, Value> {
        ControllerObservation(
            observer: observer, unmanagedKeyPath: resolved.unmanagedKeyPath,
            readsInitialValue: options.contains(.new), block: block)
    }
}

/// The box of a ``KVOController`` observation, which is also its entry in the
/// controller's table: the weakly held observer, the block and what its
/// changes are built from, read by its delivery function.
@usableFromInline
final class ControllerObservation<Observer: AnyObject, Object: AnyObject, Value>: KVOControllerEntry,
    @unchecked Sendable
{
    /// Written once, by the initializer: reads skip the dynamic exclusivity
    /// check and load the reference in place (a weak reference inside a
    /// struct field would be copied out, and the copy destroyed, on every
    /// delivery).
    @usableFromInline
    @exclusivity(unchecked) weak var observer: Observer?
    @usableFromInline
    let block: @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    /// The registry's key path (immortal), equal to the observed one and so
    /// of its type: held without a reference count.
    @usableFromInline
    let unmanagedKeyPath: Unmanaged<AnyKeyPath>

    @inlinable
    init(
        observer: Observer?, unmanagedKeyPath: Unmanaged<AnyKeyPath>, readsInitialValue: Bool,
        block: @escaping @Sendable (Observer, Object, ObservedChange<Value>) -> Void
    ) {
        self.observer = observer
        self.block = block
        self.unmanagedKeyPath = unmanagedKeyPath
        // Capture nothing: they read the box they are handed (see
        // EngineObservation). Two literal closures, so that neither captures
        // whether the observation asked for `.new`.
        if readsInitialValue {
            super.init { change, box in
                ControllerObservation.deliver(change, to: box, readsInitialValue: true)
            }
        } else {
            super.init { change, box in
                ControllerObservation.deliver(change, to: box, readsInitialValue: false)
            }
        }
    }

    /// The delivery function's body.
    @inlinable @inline(__always)
    static func deliver(_ change: EngineChange, to box: EngineObservation, readsInitialValue: Bool) {
        let box = unsafeDowncast(box, to: ControllerObservation<Observer, Object, Value>.self)
        guard let observer = box.observer else {
            // The observer is gone: never call it again; remove without
            // taking the writer lock on this dispatch path.
            Engine.unobserveDeferred(box.token)
            return
        }
        change.withObject(as: Object.self) { object in
            if change.isPlain {
                box.block(observer, object, ObservedChange(plain: change, keyPath: box.unmanagedKeyPath))
            } else {
                box.deliverGeneral(change, of: observer, object, readsInitialValue: readsInitialValue)
            }
        }
    }

    /// Delivers a change that is not ``EngineChange/isPlain``; out of line.
    @inlinable @inline(never)
    func deliverGeneral(
        _ change: EngineChange, of observer: Observer, _ object: Object, readsInitialValue: Bool
    ) {
        Deliveries.deliverGeneral(
            change, of: object,
            keyPath: unsafeDowncast(unmanagedKeyPath.takeUnretainedValue(), to: KeyPath<Object, Value>.self),
            readsInitialValue: readsInitialValue, unmanagedKeyPath: unmanagedKeyPath
        ) { object, change in block(observer, object, change) }
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
        return try controller.observe(object, keyPath, options: options) { observer, object, change in
            block(observer, object, change.map { $0 as Any })
        }
    }
}

/// Carries an observer and a change (values copied when the change happened)
/// to the main actor for a main-actor-isolated action.
struct MainActorTransfer<Observer: AnyObject, Value>: @unchecked Sendable {
    let observer: Observer
    let change: ObservedChange<Value>
}

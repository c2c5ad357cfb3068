/// Named notifications: observers register a block for a name, optionally for
/// one sender only, and posts carry a sender and a user-info payload.
///
/// ```swift
/// extension NotificationHub.Name {
///     static let accountSynced = NotificationHub.Name("accountSynced")
/// }
/// NotificationHub.default.addObserver(self, name: .accountSynced, object: nil) { observer, note in
///     observer.refresh(count: note.userInfo["count"] as? Int)
/// }
/// NotificationHub.default.post(name: .accountSynced, object: account, userInfo: ["count": 3])
/// ```
///
/// Built on the same lock-free engine as key-value observing: an observed
/// name is an engine key (interned by the first registration for it, see
/// ``Name``), a sender filter is the observed object, and `object: nil`
/// observes every sender (the engine's wildcard). A post with a sender reaches
/// the observers of that sender and the observers of every sender; a post
/// without a sender reaches only the latter.
///
/// - Observers are held weakly: once one is gone its blocks are never called
///   again and a post that meets it removes its registration (deferred,
///   without taking any lock on the posting path). Each delivery loads the
///   observer strongly for the block's duration (a retain and a release):
///   nothing else can stop the observer's deinit from running while its
///   block does. That is the one write to memory that other posting threads
///   share; a token-style registration
///   (``addObserver(forName:object:using:)``), whose block captures what it
///   needs, makes none: the post lends the sender, the block borrows the
///   notification, and reading `note.object` counts no reference.
/// - Senders given as filters are not retained. A ``KeyValueObservable``
///   sender's registrations are removed when it deinitializes; a plain
///   sender's stay until their observer is removed (no post can come from
///   the dead sender, so none meets them), keeping the dead sender's memory
///   allocated so that no new object at its address passes for it.
/// - Blocks run synchronously on the posting thread, in registration order,
///   with no lock held. They must be `@Sendable` and nonisolated, so
///   actor-isolated observers are rejected at compile time (hop explicitly, or
///   consume ``notifications(named:object:bufferingPolicy:)`` on the actor).
/// - Removal (by observer, by name, by registration, by token) never crashes;
///   removing twice is a no-op. Each removal reports what it removed: the
///   number of registrations, or `true`/`false` for one registration, where
///   0 and `false` mean "not found".
/// - Thread-safe: every method may be called from any thread, also from a block.
///
/// There is one hub per process, and this type is only a handle to it: a
/// struct with no stored properties, so that calling through
/// ``default`` retains and releases nothing (a shared object's reference
/// count, touched by every post on every thread, would not scale).
public struct NotificationHub: Sendable {
    /// The process-wide hub.
    @inlinable
    public static var `default`: NotificationHub { NotificationHub() }

    /// A notification name: just its string.
    ///
    /// Creating a name costs nothing (no lock, no allocation for a literal),
    /// so a name may be a static constant, a literal at the post
    /// (`post(name: "accountSynced")`) or built from data
    /// (`"user.\(id).changed"`) alike. The engine interns a name — under its
    /// writer lock, once — when an observer is first added for it; a post
    /// looks the name up lock-free and stops there if nobody ever observed it.
    /// So names that are only posted leave nothing behind, and the engine's
    /// key table grows by the distinct names ever observed, never by posts.
    ///
    /// Names of any length work. One over 1,011 UTF-8 bytes (too long for
    /// the engine's 1,024-byte key names with the hub's prefix) is mapped, by
    /// its exact bytes, to a short engine name: registering and posting such
    /// a name take a lock of the hub for that lookup, and allocate nothing
    /// more on a post.
    public struct Name: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
        /// The name's string.
        public let rawValue: String

        /// Creates a name. Takes no lock and interns nothing.
        @inlinable
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Creates a name. Takes no lock and interns nothing.
        @inlinable
        public init(_ rawValue: String) { self.init(rawValue: rawValue) }

        /// Creates a name from a literal. Takes no lock and interns nothing.
        @inlinable
        public init(stringLiteral value: String) { self.init(rawValue: value) }

        /// Names are equal when their strings are.
        public static func == (lhs: Name, rhs: Name) -> Bool { lhs.rawValue == rhs.rawValue }
        /// Hashes the name's string.
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    }

    /// One observer registration, for ``removeObserver(_:)->Bool``.
    /// Does not own the registration: discarding it changes nothing.
    public struct Registration: Hashable, Sendable {
        let token: EngineToken
        /// Its observer's address: where the hub's table files it.
        let observerAddress: UInt
    }

    /// What ``registrations(of:)`` reports of one registration.
    public struct ObserverRegistration: Hashable, Sendable {
        /// The registration, for ``removeObserver(_:)->Bool``.
        public let registration: Registration
        /// The notification name it listens to.
        public let name: Name
        /// Whether it listens to one sender only (`false`: any sender).
        public let filtersSender: Bool
    }

    /// One registration in the hub's table: its token, its name's key and its
    /// sender filter's address (0 for any sender). Its observer's address is
    /// where it is filed.
    private struct Entry {
        let token: EngineToken
        let objectAddress: UInt
        let key: EngineKey
    }

    /// One observer's registrations, filed under its address: the observer,
    /// held weakly (a dead one's registrations are found when its address is
    /// reused, and by the periodic purge), and its entries, the first inline
    /// (most observers register once; an array of one took an 80-byte block).
    private struct Filed {
        weak var observer: AnyObject?
        var first: Entry
        var rest: [Entry] = []

        init(observer: AnyObject?, first: Entry) {
            self.observer = observer
            self.first = first
        }

        var entries: [Entry] { [first] + rest }

        func contains(_ token: EngineToken) -> Bool {
            first.token == token || rest.contains { $0.token == token }
        }

        /// Every entry's token, without building an array of the entries.
        func forEachToken(_ body: (EngineToken) -> Void) {
            body(first.token)
            for entry in rest { body(entry.token) }
        }

        /// The entries `keep` accepts, refiled under the same observer (dead
        /// or alive: a dead one's stay for the purge); `nil` if none is left.
        func keeping(_ keep: (Entry) -> Bool) -> Filed? {
            // Most observers have one entry: no array for them.
            if rest.isEmpty { return keep(first) ? self : nil }
            var kept = entries.filter(keep)
            guard !kept.isEmpty else { return nil }
            var filed = Filed(observer: observer, first: kept.removeFirst())
            filed.rest = kept
            return filed
        }
    }

    private static let table = LockedState<(entries: [UInt: Filed], purgeAt: Int)>(([:], 64))

    @usableFromInline
    init() {}

    // MARK: Adding observers

    /// Registers `block` for notifications named `name`, from `object` only or
    /// (with `nil`) from any sender, for as long as `observer` lives.
    ///
    /// - Parameters:
    ///   - observer: Passed to `block`; held weakly. Its registrations go when it dies.
    ///   - name: The notification name.
    ///   - object: The sender to listen to; `nil` for every sender. Not
    ///     retained. A ``KeyValueObservable`` sender removes the registration
    ///     when it deinitializes. Any other sender does not: the registration
    ///     stays (never called again) until the observer is removed, and it
    ///     keeps the dead sender's memory allocated — an `unowned` reference,
    ///     so that no new object at that address is taken for the sender.
    ///   - block: Called synchronously on the posting thread.
    /// - Returns: The registration, for ``removeObserver(_:)->Bool``;
    ///   discarding it keeps the registration.
    /// - Throws: ``KVOError/outOfMemory`` when the engine cannot register it
    ///   (nothing is registered then, and `block` is never called).
    @inlinable @discardableResult
    public func addObserver<Observer: AnyObject>(
        _ observer: Observer, name: Name, object: AnyObject? = nil,
        using block: @escaping @Sendable (Observer, HubNotification) -> Void
    ) throws(KVOError) -> Registration {
        // Inlinable, so the delivery closure is specialized for `Observer`
        // where it is called: unspecialized, each delivery copied the
        // notification through the runtime's value witnesses.
        let sender = Sender(object)
        return try add(
            Self.makeBox(observer: observer, sender: sender, block), for: observer, name: name,
            sender: sender)
    }

    /// The part of ``addObserver(_:name:object:using:)`` that does not depend
    /// on the observer's type: registers `box` and files it under `observer`.
    @usableFromInline
    func add(
        _ box: EngineObservation, for observer: AnyObject, name: Name, sender: Sender
    ) throws(KVOError) -> Registration {
        let (token, key) = try register(box, name: name, sender: sender)
        let address = Engine.address(of: observer)
        let entry = Entry(
            token: token, objectAddress: sender.object.map { Engine.address(of: $0) } ?? 0, key: key)
        var dead: [EngineToken] = []
        Self.table.withLock { table in
            Self.file(entry, of: observer, in: &table.entries[address], dead: &dead)
            if table.entries.count >= table.purgeAt {
                table.entries = table.entries.compactMapValues { filed in
                    Self.isDead(filed, dead: &dead) ? nil : filed
                }
                table.purgeAt = max(64, table.entries.count * 2)
            }
        }
        // A dead observer's registration is removed by the first post that
        // meets it; one that no post reaches (its sender died, or nobody
        // posts the name again) is removed here.
        for token in dead { Engine.unobserve(token) }
        return Registration(token: token, observerAddress: address)
    }

    /// Adds `entry` to `observer`'s registrations (edited in place). The
    /// registrations filed there for an observer that died (the new one reuses
    /// its memory) are not this observer's: they go, their tokens into `dead`.
    /// A live observer filed at an address is the object at that address.
    private static func file(
        _ entry: Entry, of observer: AnyObject, in filed: inout Filed?, dead: inout [EngineToken]
    ) {
        // Tested in place: binding the filed value would copy its weak reference.
        if filed != nil, isDead(filed.unsafelyUnwrapped, dead: &dead) {
            filed = nil
        }
        if filed == nil {
            filed = Filed(observer: observer, first: entry)
        } else {
            filed?.rest.append(entry)
        }
    }

    /// Gives back the table's spare room once it holds under a quarter of
    /// what it has room for: a dictionary never shrinks by itself, so a
    /// process that once had many observers would keep their table for good
    /// (100,000 observers leave 12 MB). Rebuilt at most once for every
    /// three quarters of the entries removed: amortized O(1) per removal.
    private static func shrinkIfSparse(_ table: inout (entries: [UInt: Filed], purgeAt: Int)) {
        guard table.entries.capacity > minimumShrinkCapacity, table.entries.count < table.entries.capacity / 4
        else { return }
        var shrunk = [UInt: Filed](minimumCapacity: table.entries.count)
        for (address, filed) in table.entries { shrunk[address] = filed }
        table.entries = shrunk
        table.purgeAt = max(64, shrunk.count * 2)
    }

    /// The capacity below which the table is never rebuilt smaller.
    private static let minimumShrinkCapacity = 96

    /// How many observers the hub's table files, and how many it has room
    /// for, read at one moment (tests).
    static var tableOccupancy: (count: Int, capacity: Int) {
        table.withLock { ($0.entries.count, $0.entries.capacity) }
    }

    /// Whether the observer `filed` is under died (the caller's observer
    /// reuses its memory); if so, its entries' tokens are added to `dead`.
    private static func isDead(_ filed: Filed, dead: inout [EngineToken]) -> Bool {
        guard filed.observer == nil else { return false }
        filed.forEachToken { dead.append($0) }
        return true
    }

    /// Registers `block` for notifications named `name`, until the returned
    /// token is invalidated or deinitialized.
    ///
    /// - Parameters:
    ///   - name: The notification name.
    ///   - object: The sender to listen to; `nil` for every sender. Not
    ///     retained. A ``KeyValueObservable`` sender removes the registration
    ///     when it deinitializes (the token's ``ObservationToken/isValid``
    ///     turns `false`). Any other sender does not: the registration stays
    ///     (never called again) until the token is invalidated, keeping the
    ///     dead sender's memory allocated, as for
    ///     ``addObserver(_:name:object:using:)``.
    ///   - block: Called synchronously on the posting thread.
    /// - Throws: ``KVOError/outOfMemory`` when the engine cannot register it
    ///   (nothing is registered then, and `block` is never called).
    public func addObserver(
        forName name: Name, object: AnyObject? = nil,
        using block: @escaping @Sendable (HubNotification) -> Void
    ) throws(KVOError) -> ObservationToken {
        let sender = Sender(object)
        let box = HubTokenObservation(pinnedSender: Self.pin(sender), block: block)
        // A KeyValueObservable sender's death removes the registration, which
        // the token then reports invalid; any other lasts until invalidated.
        return ObservationToken(engineToken: try register(box, name: name, sender: sender).0)
    }

    // MARK: Posting

    /// Posts a notification: calls the matching blocks synchronously on this
    /// thread, in registration order.
    ///
    /// Takes no lock and allocates nothing once warm, and costs the same for a
    /// literal as for a static constant: the name's key is found by its bytes.
    /// Each thread remembers the key of the last observed name it posted (a
    /// comparison of bytes); another name is looked up in the engine's name table,
    /// lock-free (a hash and a probe). A name nobody ever observed stops at
    /// that lookup and is not interned; a name nobody observes any more costs
    /// one more load.
    ///
    /// - Parameters:
    ///   - name: The notification name.
    ///   - object: The sender; `nil` reaches only observers of every sender.
    ///   - userInfo: A payload passed to every block.
    public func post(name: Name, object: AnyObject? = nil, userInfo: [String: any Sendable] = [:]) {
        let key = name.keyIfEverObserved
        guard key != 0, Engine.hasObservers(nil, key) else { return }
        // The sender's address, taken here: a closure capturing the sender
        // itself would retain it, a write to the reference count that every
        // thread posting for this sender shares.
        let address = object.map { Engine.address($0) }
        HubNotification.posting(name: name, object: object, userInfo: userInfo) { contents in
            _ = Engine.announceRaw(
                prior: false, object: address, key: key, kind: .setting, old: nil, new: contents, indexes: [])
        }
    }

    // MARK: Removing observers

    /// Removes every registration of `observer`.
    ///
    /// - Returns: How many registrations were removed; 0 ("not found") if it
    ///   had none left (never added, already removed, or gone with a dead
    ///   ``KeyValueObservable`` sender or because the observer died).
    @discardableResult
    public func removeObserver(_ observer: AnyObject) -> Int {
        let address = Engine.address(of: observer)
        var dead: [EngineToken] = []
        let entries: [Entry] = Self.table.withLock { table in
            guard let filed = table.entries.removeValue(forKey: address) else { return [] }
            Self.shrinkIfSparse(&table)
            return Self.isDead(filed, dead: &dead) ? [] : filed.entries
        }
        // Entries of a dead observer whose memory `observer` reuses are not
        // its registrations: removed, not counted.
        for token in dead { Engine.unobserve(token) }
        return entries.count { Engine.unobserve($0.token) == nil }
    }

    /// The registrations `observer` has with the hub (those added with
    /// ``addObserver(_:name:object:using:)``; token-style ones belong to their
    /// tokens), in the order they were added.
    ///
    /// Takes the hub's registration lock for a moment; posts never take it,
    /// so notification is never held up. O(the observer's registrations).
    public func registrations(of observer: AnyObject) -> [ObserverRegistration] {
        let address = Engine.address(of: observer)
        let entries: [Entry] = Self.table.withLock { table in
            guard let filed = table.entries[address], filed.observer === observer else { return [] }
            return filed.entries
        }
        return entries.compactMap { entry in
            Name(engineKey: entry.key).map {
                ObserverRegistration(
                    registration: Registration(token: entry.token, observerAddress: address), name: $0,
                    filtersSender: entry.objectAddress != 0)
            }
        }
    }

    /// Removes `observer`'s registrations for `name` — from `object` only, or
    /// (with `nil`) whatever their sender filter.
    ///
    /// - Returns: How many registrations were removed; 0 ("not found") if
    ///   there were none left.
    @discardableResult
    public func removeObserver(_ observer: AnyObject, name: Name, object: AnyObject? = nil) -> Int {
        let address = Engine.address(of: observer)
        let objectAddress = object.map { Engine.address(of: $0) }
        // Every registered name has a key: one without never matches.
        let key = name.keyIfEverObserved
        var removed: [EngineToken] = []
        var dead: [EngineToken] = []
        Self.table.withLock { table in
            // A dead observer's, at a reused address, go to `dead`.
            guard let filed = table.entries.removeValue(forKey: address) else { return }
            defer { Self.shrinkIfSparse(&table) }
            guard !Self.isDead(filed, dead: &dead) else { return }
            table.entries[address] = filed.keeping { entry in
                guard key != 0, entry.key == key, objectAddress == nil || entry.objectAddress == objectAddress
                else { return true }
                removed.append(entry.token)
                return false
            }
        }
        for token in dead { Engine.unobserve(token) }
        return removed.count { Engine.unobserve($0) == nil }
    }

    /// Removes one registration.
    ///
    /// - Returns: `true` if it was removed; `false` ("not found") if it was
    ///   already removed, or went with its dead observer or sender.
    @discardableResult
    public func removeObserver(_ registration: Registration) -> Bool {
        let removed = Engine.unobserve(registration.token) == nil
        Self.table.withLock { table in
            // Filed under its observer's address, unless the observer died
            // and another took the address (then that one's entries are there).
            let address = registration.observerAddress
            guard let filed = table.entries[address], filed.contains(registration.token) else { return }
            table.entries[address] = filed.keeping { $0.token != registration.token }
            Self.shrinkIfSparse(&table)
        }
        return removed
    }

    // MARK: Internals

    /// A registration's sender, and whether it is ``KeyValueObservable``
    /// (checked once: a dynamic conformance check is a runtime cache lookup).
    @usableFromInline
    struct Sender {
        @usableFromInline
        let object: AnyObject?
        @usableFromInline
        let observable: (any KeyValueObservable)?

        @usableFromInline
        init(_ object: AnyObject?) {
            self.object = object
            observable = object as? any KeyValueObservable
        }
    }

    /// Registers `box` with the engine. No owner: the hub's own table finds an
    /// observer's registrations, so the engine keeps no owner group for them.
    private func register(
        _ box: EngineObservation, name: Name, sender: Sender
    ) throws(KVOError) -> (EngineToken, EngineKey) {
        if let observed = sender.observable {
            observed.kvoRegistrar.attach(observed)
        }
        let key = name.internedKey()
        guard key != 0 else { throw .outOfMemory }  // the name could not be interned
        let token = try Engine.observe(
            object: sender.object.map { Engine.address($0) }, key: key, options: .new,
            owner: nil, box: box)
        return (token, key)
    }

    @inlinable
    static func makeBox<Observer: AnyObject>(
        observer: Observer, sender: Sender,
        _ block: @escaping @Sendable (Observer, HubNotification) -> Void
    ) -> EngineObservation {
        HubObservation(observer: observer, pinnedSender: pin(sender), block: block)
    }

    /// What a box keeps of `sender`. A sender that is KeyValueObservable
    /// removes its observations when it dies (its registrar). Any other
    /// sender must never be mistaken for a new object at its address: the box
    /// holds it `unowned`, which keeps the dead sender's memory (not the
    /// object: it deinitializes as usual) allocated for as long as the box
    /// lives, so no other object can appear at its address and a post from
    /// that address always comes from the sender itself — no weak load per
    /// delivery.
    @inlinable
    static func pin(_ sender: Sender) -> SenderPin? {
        sender.observable == nil ? sender.object.map(SenderPin.init(object:)) : nil
    }

    /// Pins a plain sender's memory (see `pin(_:)`).
    @usableFromInline
    struct SenderPin {
        @usableFromInline
        unowned let object: AnyObject

        @inlinable
        init(object: AnyObject) { self.object = object }
    }
}

/// The box of a ``NotificationHub`` registration made with an observer: the
/// weakly held observer and the block, read by its delivery function.
@usableFromInline
final class HubObservation<Observer: AnyObject>: SelfRemovingObservation, @unchecked Sendable {
    override var observerKind: ObservationSummary.Observer { .hub }

    /// Written once, by the initializer: reads skip the dynamic exclusivity
    /// check and load the reference in place (a weak reference inside a
    /// struct field would be copied out, and the copy destroyed, on every
    /// delivery).
    @usableFromInline
    @exclusivity(unchecked) weak var observer: Observer?
    @usableFromInline
    let block: @Sendable (Observer, HubNotification) -> Void
    /// Kept, never read (see `NotificationHub.pin(_:)`).
    @usableFromInline
    let pinnedSender: NotificationHub.SenderPin?

    @inlinable
    init(
        observer: Observer, pinnedSender: NotificationHub.SenderPin?,
        block: @escaping @Sendable (Observer, HubNotification) -> Void
    ) {
        self.observer = observer
        self.pinnedSender = pinnedSender
        self.block = block
        // Captures nothing: reads the box it is handed (see EngineObservation).
        super.init { change, box in
            let box = unsafeDowncast(box, to: HubObservation<Observer>.self)
            guard let observer = box.observer else {
                Engine.unobserveDeferred(box.token)
                return
            }
            change.withNewObject(as: HubNotification.Contents.self) {
                box.block(observer, HubNotification(contents: $0))
            }
        }
    }
}

/// The box of a token-style ``NotificationHub`` registration (no observer).
final class HubTokenObservation: EngineObservation, @unchecked Sendable {
    override var observerKind: ObservationSummary.Observer { .hub }

    let block: @Sendable (HubNotification) -> Void
    /// Kept, never read (see `NotificationHub.pin(_:)`).
    let pinnedSender: NotificationHub.SenderPin?

    init(pinnedSender: NotificationHub.SenderPin?, block: @escaping @Sendable (HubNotification) -> Void) {
        self.pinnedSender = pinnedSender
        self.block = block
        super.init { change, box in
            let box = unsafeDowncast(box, to: HubTokenObservation.self)
            change.withNewObject(as: HubNotification.Contents.self) {
                box.block(HubNotification(contents: $0))
            }
        }
    }
}

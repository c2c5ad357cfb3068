// What a KVOController observes: a record per observed object, an entry per observed key, filed
// under the controller's lock; and how an entry taken out of the table is removed after the lock.

import Synchronization

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
        if !token.isNone { return Engine.unobserve(token) == nil }
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
    override var observerKind: ObservationSummary.Observer { .controller }

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

    /// The key path the entry observes, for introspection.
    var observedKeyPath: AnyKeyPath? { nil }

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

    /// The chain's key path.
    private let keyPath: AnyKeyPath

    init(keyPath: AnyKeyPath) {
        self.keyPath = keyPath
        super.init { _, _ in }  // never registered, never delivered to
    }

    override var observedKeyPath: AnyKeyPath? { keyPath }

    override var chain: ObservationToken? { chainToken }
}

/// What a ``KVOController`` files an entry under: the observed property, not
/// the key path's spelling. `\Derived.name` and `\Base.name` name the same
/// property (the same engine key), so they share one entry: observing
/// through both is a duplicate, and unobserving through either removes it.
///
/// One word, hashed once: an engine key, shifted and tagged odd, for a
/// property or dependent key; for a key-path chain, which has no single
/// engine key, the number of what it reads, shifted (even): the same for
/// `\Derived.account.name` and `\Base.account.name`, and for
/// `\Owner.wallet?.balance` and the name `"wallet.balance"`.
enum KVOControllerKey {
    /// The key `resolved` is filed under.
    static func of(_ resolved: ResolvedKeyPath) -> UInt {
        switch resolved.kind {
        case .property, .dependent:
            UInt(resolved.key) << 1 | 1
        case .chain where resolved.key != 0:  // an override: one observation whatever the spelling
            UInt(resolved.key) << 1 | 1
        case .chain:
            resolved.chainNumber << 1
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

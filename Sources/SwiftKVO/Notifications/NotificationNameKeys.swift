// How a notification name becomes an engine key: interned by the first registration, looked up
// lock-free by posts, remembered per thread. The engine caps a key's name at 1,024 bytes, so a
// name over `directLimit` bytes is mapped, by its exact bytes, to a serial number under a lock
// (`LongNames`) and interned under that short name; only such names take that lock, posts too.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension NotificationHub.Name {
    /// What the name's engine key is interned from: notification names live
    /// apart from property keys.
    private static var keyPrefix: StaticString { "notification:" }

    /// The longest name, in UTF-8 bytes, interned under its own bytes: with
    /// ``keyPrefix``, the engine's limit of 1,024 bytes. Longer names are
    /// mapped to a short name (see ``LongNames``).
    static var directLimit: Int { 1024 - keyPrefix.utf8CodeUnitCount }

    /// The name's engine key, interned if it is not yet (the registration
    /// path: only then the engine's writer lock); 0 only if the engine is out
    /// of memory. Any name works, of any length, the empty one included.
    func internedKey() -> EngineKey {
        // A name registered before is found lock-free, without building the
        // prefixed string.
        let known = keyIfEverObserved
        if known != 0 { return known }
        guard rawValue.utf8.count <= Self.directLimit else { return LongNames.internedKey(of: rawValue) }
        let key = Engine.intern("\(Self.keyPrefix)" + rawValue)
        EngineKeyDescriptions.file(key, name: rawValue)
        return key
    }

    /// The name's engine key if anyone ever observed it, else 0: the post
    /// path, lock-free, interning nothing. This thread's last name with a key
    /// answers without the engine's name table.
    var keyIfEverObserved: EngineKey {
        if let key = rawValue.utf8.withContiguousStorageIfAvailable(Self.key(ofBytes:)) { return key }
        var contiguous = rawValue
        return contiguous.withUTF8(Self.key(ofBytes:))
    }

    /// The name whose engine key is `key`, if it is a notification name's
    /// (introspection: the reverse of ``internedKey()``).
    init?(engineKey key: EngineKey) {
        guard let interned = Engine.name(of: key) else { return nil }
        if interned.hasPrefix("\(Self.keyPrefix)") {
            self.init(rawValue: String(interned.dropFirst(Self.keyPrefix.utf8CodeUnitCount)))
        } else if let name = LongNames.name(ofKey: key) {
            self.init(rawValue: name)
        } else {
            return nil
        }
    }

    private static func key(ofBytes bytes: UnsafeBufferPointer<UInt8>) -> EngineKey {
        if bytes.count > directLimit { return LongNames.key(ofBytes: bytes) }
        return NameKeyCache.withCurrent { cache in
            if let key = cache.key(of: bytes) { return key }
            let key = Engine.findKey(keyPrefix, bytes)
            if key != 0 { cache.remember(bytes, key: key) }
            return key
        }
    }
}

/// Each thread's last posted name that had an engine key (a copy of its
/// UTF-8 bytes, up to ``capacity``), and that key.
///
/// A key never changes once interned (the engine never removes a name), so a
/// remembered key stays right for as long as the process runs. A name found
/// without a key is not remembered: a later registration may intern it.
/// Names are compared by their bytes, as the engine compares them. Only the
/// owning thread touches its cache.
final class NameKeyCache {
    /// The longest name remembered, in bytes.
    static let capacity = 128

    private let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: NameKeyCache.capacity)
    @exclusivity(unchecked) private var count = 0
    @exclusivity(unchecked) private var key: EngineKey = 0

    private static let caches = ThreadLocal<NameKeyCache>()

    deinit { bytes.deallocate() }

    /// Calls `body` with this thread's cache.
    static func withCurrent(_ body: (NameKeyCache) -> EngineKey) -> EngineKey {
        caches.unmanagedValue(NameKeyCache.init)._withUnsafeGuaranteedRef(body)
    }

    /// The remembered key if `name` is the remembered name, else `nil`.
    func key(of name: UnsafeBufferPointer<UInt8>) -> EngineKey? {
        guard key != 0, name.count == count, count > 0,
            memcmp(bytes, name.baseAddress!, count) == 0
        else { return nil }
        return key
    }

    /// Remembers `name` (if it fits) and its key.
    func remember(_ name: UnsafeBufferPointer<UInt8>, key: EngineKey) {
        guard let base = name.baseAddress, name.count <= Self.capacity else { return }
        bytes.update(from: base, count: name.count)
        count = name.count
        self.key = key
    }
}

/// Notification names too long to be interned under their own bytes (over
/// ``NotificationHub/Name/directLimit``), each mapped by its exact UTF-8 bytes
/// to a serial number, and interned as `notification-long:<serial>`: a name
/// the engine always accepts, which no name that fits can spell (those are
/// interned as `notification:<name>`).
///
/// The table only grows, as the engine's key table does: a name keeps its
/// serial, and so its key, for the life of the process. Lookups take the lock
/// and allocate nothing.
enum LongNames {
    private struct Entry {
        let bytes: [UInt8]
        let serial: Int
        /// 0 until the first registration interned it.
        var key: EngineKey
    }

    /// Entries by the hash of their bytes.
    private static let table = LockedState((entries: [Int: [Entry]](), next: 0))

    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        return hasher.finalize()
    }

    /// The long name whose key is `key`, if any (introspection; O(long names)).
    static func name(ofKey key: EngineKey) -> String? {
        table.withLock { table in
            for entries in table.entries.values {
                if let entry = entries.first(where: { $0.key == key }) { return String(decoding: entry.bytes, as: UTF8.self) }
            }
            return nil
        }
    }

    /// The key of the long name `bytes` if it was ever registered, else 0.
    static func key(ofBytes bytes: UnsafeBufferPointer<UInt8>) -> EngineKey {
        let hash = hash(bytes)
        return table.withLock { table in
            table.entries[hash]?.first { $0.bytes.elementsEqual(bytes) }?.key ?? 0
        }
    }

    /// The key of the long name `name`, interned if it is not yet; 0 only if
    /// the engine is out of memory. The engine is called outside the lock:
    /// threads racing on one name get one serial, so intern one short name
    /// (one key).
    static func internedKey(of name: String) -> EngineKey {
        let bytes = Array(name.utf8)
        let hash = bytes.withUnsafeBufferPointer(hash)
        let (serial, known) = table.withLock { table in
            if let entry = table.entries[hash]?.first(where: { $0.bytes == bytes }) {
                return (entry.serial, entry.key)
            }
            table.next += 1
            table.entries[hash, default: []].append(Entry(bytes: bytes, serial: table.next, key: 0))
            return (table.next, 0)
        }
        if known != 0 { return known }
        let key = Engine.intern("notification-long:\(serial)")
        guard key != 0 else { return 0 }
        EngineKeyDescriptions.file(key, name: name)
        table.withLock { table in
            guard let index = table.entries[hash]?.firstIndex(where: { $0.serial == serial }) else { return }
            table.entries[hash]![index].key = key
        }
        return key
    }
}

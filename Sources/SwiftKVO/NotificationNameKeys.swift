// How a notification name becomes an engine key: interned by the first
// registration for the name, looked up lock-free by posts, and remembered per
// thread so that a thread posting one name again skips the lookup.

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

    /// The name's engine key, interned if it is not yet (the registration
    /// path: only then the engine's writer lock); 0 if the engine refuses the
    /// name (empty, or over 1024 bytes with the prefix).
    func internedKey() -> EngineKey {
        // A name registered before is found lock-free, without building the
        // prefixed string.
        let known = keyIfEverObserved
        return known != 0 ? known : Engine.intern("\(Self.keyPrefix)" + rawValue)
    }

    /// The name's engine key if anyone ever observed it, else 0: the post
    /// path, lock-free, interning nothing. This thread's last name with a key
    /// answers without the engine's name table.
    var keyIfEverObserved: EngineKey {
        if let key = rawValue.utf8.withContiguousStorageIfAvailable(Self.key(ofBytes:)) { return key }
        var contiguous = rawValue
        return contiguous.withUTF8(Self.key(ofBytes:))
    }

    private static func key(ofBytes bytes: UnsafeBufferPointer<UInt8>) -> EngineKey {
        NameKeyCache.withCurrent { cache in
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

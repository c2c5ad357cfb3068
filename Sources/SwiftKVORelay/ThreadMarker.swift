#if Relay
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Marks what the current thread is doing, for code it calls synchronously:
/// while a relay assigns a remote value to a property, its own observer of
/// that property (called on the same thread, during the assignment) sees the
/// mark and does not publish the value again.
///
/// A thread-specific slot, not a task-local value: a task started from an
/// observer must not inherit the mark.
final class ThreadMarker: @unchecked Sendable {  // the key is written once, in init
    private var key = pthread_key_t()

    init() {
        precondition(pthread_key_create(&key, nil) == 0, "out of thread-specific keys")
    }

    deinit { pthread_key_delete(key) }

    /// Runs `body` with `mark` set on this thread (restoring the previous mark after).
    func with<R>(_ mark: AnyObject, _ body: () throws -> R) rethrows -> R {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(mark).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return try body()
    }

    /// Whether this thread is inside `with(mark)`.
    func isSet(_ mark: AnyObject) -> Bool {
        pthread_getspecific(key) == Unmanaged.passUnretained(mark).toOpaque()
    }
}
#endif

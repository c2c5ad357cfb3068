#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value protected by a mutex, for registration-path bookkeeping only
/// (never taken on a notification path, never held while user code or the
/// engine runs). Like swift-nio's `NIOLockedValueBox`.
final class LockedState<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Accessed only inside `withLock`: the mutex is its exclusivity, so
    /// each access skips the runtime's dynamic check.
    @exclusivity(unchecked) private var state: State

    init(_ state: State) {
        self.state = state
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the state, holding the lock.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}

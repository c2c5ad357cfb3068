// Locked.swift — a value behind a pthread mutex.
//
// Not Synchronization's Mutex: on Linux its lock is a futex loop inside the
// (uninstrumented) standard library, so ThreadSanitizer sees none of the
// ordering it provides and reports every access it protects. A pthread mutex
// is intercepted by ThreadSanitizer. (SwiftKVO's own LockedState is internal.)

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

final class Locked<State>: @unchecked Sendable {  // `state` is only touched with `mutex` held
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var state: State

    init(_ state: State) {
        self.state = state
        mutex.initialize(to: pthread_mutex_t())
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

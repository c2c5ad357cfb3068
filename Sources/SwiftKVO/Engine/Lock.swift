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
///
/// A handle to one heap block holding both the value and the mutex (the
/// mutex needs a stable address, which a `ManagedBuffer` element has):
/// copies of a `LockedState` share them.
package struct LockedState<State>: @unchecked Sendable {
    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    private let storage: Storage

    package init(_ state: State) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in state }
        buffer.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            _ = pthread_mutex_init(mutex, nil)
        }
        storage = unsafeDowncast(buffer, to: Storage.self)
    }

    /// Runs `body` with the state, holding the lock.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            #if DEBUG
            LockAudit.enter()
            defer { LockAudit.leave() }
            #endif
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }
}

#if DEBUG
/// Debug builds check the rule that keeps the layer free of deadlocks across
/// the C boundary: no engine writer call (registration, removal, interning)
/// is made while this thread holds a ``LockedState`` lock. A writer call may
/// run release callbacks — user deinits — which may take any of these locks
/// again on the same thread.
enum LockAudit {
    private final class ThreadAudit {
        var locksHeld = 0
        var violations = 0
    }

    private static let audit = ThreadLocal<ThreadAudit>()

    static func enter() { audit.value { ThreadAudit() }.locksHeld += 1 }
    static func leave() { audit.value { ThreadAudit() }.locksHeld -= 1 }

    /// Called by every engine writer call.
    static func checkNoLockHeld() {
        if let thread = audit.currentValue, thread.locksHeld > 0 { thread.violations += 1 }
    }

    /// How many engine writer calls this thread made under a lock so far.
    static var violationsOnThisThread: Int { audit.currentValue?.violations ?? 0 }
}
#endif

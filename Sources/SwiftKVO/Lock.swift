import Synchronization

/// A value protected by a mutex, for registration-path bookkeeping only
/// (never taken on a notification path, never held while user code or the
/// engine runs). Like swift-nio's `NIOLockedValueBox`.
///
/// A handle to one heap block holding both the value and the lock (the
/// standard library's `Mutex`, one 32-bit word on Linux, where a
/// `pthread_mutex_t` takes 40 bytes): copies of a `LockedState` share them.
struct LockedState<State>: @unchecked Sendable {
    private final class Storage {
        let mutex = Mutex<Void>(())
        /// Accessed only while `mutex` is held: the mutex is its exclusivity,
        /// so each access skips the runtime's dynamic check.
        @exclusivity(unchecked) var state: State

        init(_ state: State) { self.state = state }
    }

    private let storage: Storage

    init(_ state: State) {
        storage = Storage(state)
    }

    /// Runs `body` with the state, holding the lock.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        // Locked and unlocked around `body` directly: `Mutex.withLock` would
        // require the result to be `sending`, which the callers' results
        // (taken out of the state) are not.
        storage.mutex._unsafeLock()
        #if DEBUG
        LockAudit.enter()
        defer { LockAudit.leave() }
        #endif
        defer { storage.mutex._unsafeUnlock() }
        return try body(&storage.state)
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

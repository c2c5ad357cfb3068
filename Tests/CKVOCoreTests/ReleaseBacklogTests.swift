// The release queue stays bounded while removals outpace its runner, and no thread's death,
// cancellation or fork() inside the engine wedges a hub or crashes a child (SPEC §2.23).
// Timeouts here are liveness limits only: a correct engine meets them on any machine.

import CKVOCore
import CKVOTestSupport
import IsolatedRunSupport
import Testing

/// pending_releases may exceed CKVO_RELEASE_BACKLOG by what waits for a grace period and by
/// each thread's own removals in flight (see ckvo_release_t in ckvo.h).
private let pendingBound = 4096 + 2 * 64 + 64

@Suite struct ReleaseBacklogTests {
    private func describeFork(_ code: Int32) -> String {
        switch code {
        case Int32(CKVOTS_FORK_CHILD_TIMEOUT): "child hung (killed after the deadline)"
        case Int32(CKVOTS_FORK_CHILD_SIGNALED)...: "child killed by signal \(code - Int32(CKVOTS_FORK_CHILD_SIGNALED))"
        default: "code \(code)"
        }
    }

    /// Two threads observe and unobserve for a second, each release taking 2 µs: the releases
    /// pending never exceed the documented bound, and each runs exactly once. In a process of its
    /// own: grace periods are process-wide, and other suites' callbacks that block on purpose
    /// hold them open (the bound's grace-period part assumes no dispatch does).
    @Test func pendingReleasesStayUnderTheBoundWhileRemovalsOutpaceTheRunner() async throws {
        let name = "pendingReleasesStayUnderTheBoundWhileRemovalsOutpaceTheRunner"
        guard isIsolatedChild(name) else {
            try await measureInChild(
                filter: "CKVOCoreTests.ReleaseBacklogTests/\(name)", name: name, marker: "backlog churn:")
            return
        }
        let hub = TestHub()
        var maxPending = 0
        var cycles: UInt64 = 0
        let result = ckvots_backlog_churn(hub.raw, hub.key("value"), 2_000, 1_000, &maxPending, &cycles)
        print("backlog churn: \(cycles) cycles, at most \(maxPending) releases pending (bound \(pendingBound))")
        #expect(result == 0, "code \(result)")
        #expect(maxPending <= pendingBound, "\(maxPending) releases pending")
        #expect(hub.stats().pending_releases == 0)
    }

    /// A flush waits for what was removed before it, however long other threads keep removing:
    /// it returns while they still churn, with every earlier removal released.
    @Test func flushReturnsWhileOtherThreadsKeepChurning() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let outcome = Box<(Int32, Int32, UInt64, UInt64)>((0, 0, 0, 0))
        let finished = finishes(within: 120) {
            var whileChurning: Int32 = 0
            var missing: UInt64 = 0
            var cycles: UInt64 = 0
            let result = ckvots_flush_during_churn(raw, key, 2_000, 20, &whileChurning, &missing, &cycles)
            outcome.value = (result, whileChurning, missing, cycles)
        }
        #expect(finished, "the scenario hung")
        guard finished else { _ = Unmanaged.passRetained(hub); return }
        let (result, whileChurning, missing, cycles) = outcome.value
        print("flush under churn: returned while churning \(whileChurning != 0), \(missing) earlier removals unreleased, \(cycles) cycles")
        #expect(result == 0, "code \(result)")
        #expect(whileChurning != 0, "the flush returned only once the churn stopped (20 s)")
        #expect(missing == 0)
    }

    /// fork() inside a release, run by a flush, a removal or the background thread: the child
    /// goes on, uses the hub, flushes and exits cleanly.
    @Test(arguments: [CKVOTS_RUNNER_FLUSH, CKVOTS_RUNNER_REMOVAL, CKVOTS_RUNNER_BACKGROUND])
    func forkInsideAReleaseLeavesAWorkingChild(runner: Int) {
        let hub = TestHub()
        let result = ckvots_fork_in_release(hub.raw, hub.key("value"), Int32(runner), 30)
        print("fork in a release (runner \(runner)): \(describeFork(result))")
        #expect(result == 0, "\(describeFork(result))")
        #expect(hub.stats().pending_releases == 0)
    }

    /// pthread_exit inside a release, run by a flush, a removal or the background thread: the
    /// release counts as run, the rest of its chunk runs exactly once, flushes return and the
    /// background thread still releases what is removed later.
    @Test(arguments: [CKVOTS_RUNNER_FLUSH, CKVOTS_RUNNER_REMOVAL, CKVOTS_RUNNER_BACKGROUND])
    func threadExitingInsideAReleaseDoesNotWedgeTheHub(runner: Int) {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let result = Box<Int32>(0)
        let finished = finishes(within: 60) { result.value = ckvots_exit_in_release(raw, key, Int32(runner)) }
        print("pthread_exit in a release (runner \(runner)): \(finished ? "code \(result.value)" : "hung")")
        #expect(finished, "the hub hung after a thread exited inside a release")
        guard finished else { _ = Unmanaged.passRetained(hub); return }
        #expect(result.value == 0, "code \(result.value)")
        #expect(hub.stats().pending_releases == 0)
    }

    /// A thread cancelled while blocked in ckvo_hub_flush (waiting for the runner, or for a
    /// dispatch in the grace period) finishes the flush first: writers and flushes go on.
    @Test(arguments: [CKVOTS_CANCEL_WAITING_FOR_RUNNER, CKVOTS_CANCEL_IN_GRACE_PERIOD])
    func threadCancelledInsideAFlushDoesNotWedgeTheHub(where place: Int) {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let result = Box<Int32>(0)
        let finished = finishes(within: 60) { result.value = ckvots_cancel_in_flush(raw, key, Int32(place)) }
        print("pthread_cancel in a flush (place \(place)): \(finished ? "code \(result.value)" : "hung")")
        #expect(finished, "the hub hung after a thread was cancelled inside a flush")
        guard finished else { _ = Unmanaged.passRetained(hub); return }
        #expect(result.value == 0, "code \(result.value)")
        #expect(hub.stats().pending_releases == 0)
    }
}

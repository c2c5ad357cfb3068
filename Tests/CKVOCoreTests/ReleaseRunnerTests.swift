// Releases run from a queue (release.c): iteratively, never on a caller's stack inside a
// callback or another release, never inside a dispatch; a flush waits by ticket for what was
// removed before it and nothing later; a release that calls back into the API behaves the same
// whichever thread runs it.

import CKVOCore
import CKVOTestSupport
import Glibc
import Testing

@Suite struct ReleaseRunnerTests {
    /// A chain of releases, each strictly removing the next observation, runs in a loop: 10,000
    /// links on a 256 KiB stack (about 1,300 recursive levels would fit).
    @Test func releaseChainOfStrictRemovalsRunsIterativelyOnASmallStack() {
        let hub = TestHub()
        let result = ckvots_release_chain(hub.raw, hub.key("chain"), 10_000, 256 * 1024)
        #expect(result == 0, "code \(result)")
        #expect(hub.stats().pending_releases == 0)
        #expect(hub.stats().observations == 0)
    }

    /// A flush waits for the releases of what was removed before it and for the chain of strict
    /// removals those releases start, also when another thread is the runner: 1,000 links, the
    /// first removed before the flush and run behind a release that holds the other thread.
    /// (Before, the flush returned after the first link and the chain went on without it: its
    /// caller then freed what the rest of the chain used.)
    @Test func flushWaitsForTheFollowUpsOfReleasesAnotherThreadRuns() {
        let hub = TestHub()
        var released = 0
        let result = ckvots_flush_waits_for_follow_ups(hub.raw, hub.key("chain"), 1_000, &released)
        #expect(result == 0, "code \(result)")
        #expect(released == 1_000, "links released when the flush returned")
        #expect(hub.stats().pending_releases == 0)
        #expect(hub.stats().observations == 0)
    }

    /// Removals from inside a callback queue releases; none runs inside that callback (so a
    /// release may take a lock the announcer holds), and ckvo_hub_flush from a release is
    /// refused the same way whichever thread runs it.
    @Test func releasesNeverRunInsideADispatch() {
        let hub = TestHub()
        var inside = 0
        var deadlocks = 0
        var flushStatus: Int32 = 0
        let result = ckvots_releases_inside_dispatch(hub.raw, hub.key("value"), &inside, &deadlocks, &flushStatus)
        #expect(result == 0, "code \(result)")
        #expect(inside == 0, "releases ran inside the callback that removed them")
        #expect(deadlocks == 0, "a release ran while its own thread held the announcer's lock")
        #expect(flushStatus == CKVO_EDEADLK.rawValue)
        #expect(hub.stats().pending_releases == 0)
    }

    /// A release that destroys its own hub is refused with CKVO_EDEADLK whether a writer, a
    /// flush or the background thread runs it, and the hub lives on.
    @Test func destroyFromItsOwnReleaseIsRefusedWhicheverThreadRunsIt() {
        for path in 0..<3 {
            let hub = TestHub()
            let raw = hub.raw
            let key = hub.key("value")
            let refused = AtomicCounter()
            let other = AtomicCounter()
            var probes: [Probe] = []
            var tokens: [ckvo_token_t] = []
            for _ in 0..<64 {
                let probe = Probe()
                probe.onRelease = {
                    if ckvo_hub_destroy(raw) == CKVO_EDEADLK { refused.next() } else { other.next() }
                }
                probes.append(probe)
                tokens.append(hub.mustObserve(probe, object: fake(0), key: key))
            }
            switch path {
            case 0:  // a writer: 64 removals, the last unlock polls and runs the queue
                for token in tokens { #expect(hub.unobserve(token) == CKVO_OK) }
                hub.flush()
            case 1:  // a flush
                for token in tokens { #expect(ckvo_unobserve_deferred(raw, token) == CKVO_OK) }
                hub.flush()
            default:  // the background thread
                for token in tokens[..<8] { #expect(hub.unobserve(token) == CKVO_OK) }
                for _ in 0..<500 where probes[..<8].contains(where: { $0.releases == 0 }) { usleep(10_000) }
                for token in tokens[8...] { #expect(hub.unobserve(token) == CKVO_OK) }
                hub.flush()
            }
            #expect(probes.allSatisfy { $0.releases == 1 }, "path \(path)")
            #expect(refused.value == 64 && other.value == 0, "path \(path): \(other.value) not refused")
            #expect(hub.did(fake(0), key) == CKVO_OK, "the hub is still alive")
            #expect(hub.destroy() == CKVO_OK)
        }
    }

    /// A flush waits for the releases of what was removed before it, not for releases another
    /// thread takes on while it runs: here that later work waits for the flush to return.
    @Test func flushWaitsOnlyForReleasesQueuedBeforeIt() {
        let hub = TestHub()
        var lateTimedOut: Int32 = 0
        let result = ckvots_flush_ignores_later_releases(hub.raw, hub.key("value"), 5, &lateTimedOut)
        #expect(result == 0, "code \(result)")
        #expect(lateTimedOut == 0, "the flush waited for a release taken on after it began")
        #expect(hub.stats().pending_releases == 0)
    }

    /// A thread that exits inside an initial callback leaves nothing behind that a flush waits
    /// for, and every release it made ready still runs.
    @Test func threadExitingInsideAnInitialCallbackLosesNoReleaseAndDoesNotHangFlush() {
        let hub = TestHub()
        let key = hub.key("value")
        let released = Box(0)
        let result = Box<Int32>(0)
        let raw = hub.raw
        let finished = finishes(within: 60) {
            var count = 0
            result.value = ckvots_exit_inside_initial_callback(raw, key, &count)
            released.value = count
        }
        #expect(finished, "the flush after the thread's exit hung")
        guard finished else {
            _ = Unmanaged.passRetained(hub)  // the hung thread may still use it
            return
        }
        #expect(result.value == 0, "code \(result.value)")
        #expect(released.value == 128, "releases were lost with the thread")
        #expect(hub.stats().pending_releases == 0)
    }
}

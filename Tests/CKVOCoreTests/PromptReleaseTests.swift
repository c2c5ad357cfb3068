// SPEC §2.10: a context is released exactly once, after a grace period, and promptly: within a
// bounded time after its removal even if the process makes no further call into the library
// (the hub's background reclaimer; the designed bound is in docs/reliability.md). These tests
// wait up to five seconds, so load never makes them flaky, and while they wait they read only
// their own probes' counters.

import CKVOCore
import CKVOTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct PromptReleaseTests {
    /// Sleeps in 10 ms steps until `done()` or five seconds; returns `done()`.
    private func waitQuietly(_ done: () -> Bool) -> Bool {
        for _ in 0..<500 where !done() { usleep(10_000) }
        return done()
    }

    @Test func removedObservationIsReleasedWithNoFurtherCall() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)
        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(waitQuietly { probe.releases == 1 })
        #expect(probe.releases == 1)
    }

    @Test func observedObjectsRemovalReleasesEveryContextWithNoFurtherCall() {
        let hub = TestHub()
        let keys = (0..<3).map { hub.key("value\($0)") }
        let probes = (0..<10).map { _ in Probe() }
        for (index, probe) in probes.enumerated() {
            _ = hub.mustObserve(probe, object: fake(1), key: keys[index % keys.count])
        }
        #expect(ckvo_unobserve_object(hub.raw, fake(1)) == CKVO_OK)
        #expect(waitQuietly { probes.allSatisfy { $0.releases == 1 } })
    }

    /// A callback removes its own observation with ckvo_unobserve_deferred (the dispatch path
    /// cannot take the writer lock), then the process makes no further call: the removal is
    /// carried out and the context released anyway.
    @Test func deferredRemovalFromItsOwnCallbackIsReleasedWithNoFurtherCall() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let token = TokenCell()
        let status = Box<ckvo_status_t?>(nil)
        let probe = Probe()
        probe.onChange = { _ in status.value = ckvo_unobserve_deferred(raw, token.value) }
        token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key)
        hub.did(fake(0), key)
        #expect(status.value == CKVO_OK)
        #expect(waitQuietly { probe.releases == 1 })
        #expect(probe.releases == 1)
        #expect(hub.stats().observations == 0)
    }

    /// The release waits for a dispatch that began before the removal (here: blocked in a
    /// callback on another thread), then runs with no further call; a fork child, where that
    /// thread does not exist, releases with no further call too.
    @Test func releaseWaitsForARunningDispatchThenRunsUnpromptedInParentAndForkChild() {
        let hub = TestHub()
        let result = ckvots_fork_prompt_release(hub.raw, fake(0), hub.key("blocked"), hub.key("removed"), 5)
        #expect(result == Int32(CKVOTS_PROMPT_OK), "code \(result)")
    }

    /// A release runs on the hub's background thread when nothing else reclaims; destroying the
    /// hub from there would join that thread from itself, so it is refused, and the hub lives on.
    @Test func destroyFromAReleaseOnTheBackgroundThreadIsRefused() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let probe = Probe()
        let status = AtomicCounter()
        status.value = 1  // no status is positive: 1 means "not yet"
        probe.onRelease = { status.value = UInt64(bitPattern: Int64(ckvo_hub_destroy(raw).rawValue)) }
        let token = hub.mustObserve(probe, object: fake(0), key: key)
        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(waitQuietly { status.value != 1 })
        #expect(Int32(truncatingIfNeeded: Int64(bitPattern: status.value)) == CKVO_EDEADLK.rawValue)
        #expect(hub.stats().observations == 0)
        #expect(hub.destroy() == CKVO_OK)
    }

    /// Interning runs no release callback: a layer may intern while holding its own lock,
    /// which a release may need.
    @Test func internNeverRunsReleaseCallbacks() {
        let hub = TestHub()
        let key = hub.key("value")
        let interningThread = currentThreadID()
        let interning = AtomicCounter()
        let releasedInsideIntern = AtomicCounter()
        // More than a writer's polling batch, so that the removals interning carries out
        // would be released on its way out.
        let probes = (0..<100).map { _ in Probe() }
        var tokens: [ckvo_token_t] = []
        for probe in probes {
            probe.onRelease = {
                if interning.value == 1 && currentThreadID() == interningThread { releasedInsideIntern.next() }
            }
            tokens.append(hub.mustObserve(probe, object: fake(0), key: key))
        }
        for token in tokens { #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_OK) }

        interning.value = 1
        _ = hub.key("interned.after.deferred.removals")
        interning.value = 0

        #expect(releasedInsideIntern.value == 0)
        #expect(hub.flush() == CKVO_OK)
        #expect(probes.allSatisfy { $0.releases == 1 })
    }
}

// Threads that come and go (SPEC §2.11, CK notes on ck_epoch records): many short-lived
// dispatching threads leave nothing behind, and a thread that exits inside a callback does not
// block the calls that wait for dispatches (flush, strict unobserve, destroy).

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct ThreadLifetimeTests {
    @Test func tenThousandShortLivedDispatchersLeaveNoResidue() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)
        let before = hub.stats()
        let total = iterations(10_000, stress: 100_000)

        let dispatched = ckvots_short_lived_dispatchers(hub.raw, fake(0), key, total, 8)

        #expect(dispatched == total)
        #expect(probe.calls == UInt64(total))
        let after = hub.stats()
        #expect(after.observations == before.observations)
        #expect(after.keys == before.keys)
        #expect(after.pending_releases == before.pending_releases)
        // The dead threads must not hold a grace period open: removal completes and releases.
        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(finishes(within: 60) { _ = ckvo_hub_flush(hub.raw) }, "ckvo_hub_flush hung")
        #expect(probe.releases == 1)
        #expect(hub.stats().pending_releases == 0)
    }

    @Test func shortLivedThreadsDoNotBlockLaterGracePeriods() {
        let hub = TestHub()
        let key = hub.key("value")
        let rounds = iterations(20, stress: 200)
        var probes: [Probe] = []
        for _ in 0..<rounds {
            let probe = Probe()
            probes.append(probe)
            let token = hub.mustObserve(probe, object: fake(0), key: key)
            #expect(ckvots_short_lived_dispatchers(hub.raw, fake(0), key, 50, 4) == 50)
            #expect(hub.unobserve(token) == CKVO_OK)
        }
        #expect(finishes(within: 60) { _ = ckvo_hub_flush(hub.raw) }, "ckvo_hub_flush hung")
        #expect(probes.allSatisfy { $0.releases == 1 })
    }

    @Test func threadExitingInsideCallbackDoesNotBlockFlush() {
        let hub = TestHub()
        let key = hub.key("value")
        let exiting = Probe()
        var token: ckvo_token_t = .none

        let status = ckvots_thread_exit_in_callback(hub.raw, fake(0), key, exiting.raw, &token)

        #expect(status == 0)
        #expect(exiting.calls == 1)
        #expect(hub.unobserve(token) == CKVO_OK)
        let flush = Box<ckvo_status_t?>(nil)
        let raw = hub.raw
        let finished = finishes(within: 60) { flush.value = ckvo_hub_flush(raw) }
        #expect(finished, "ckvo_hub_flush waited forever for a thread that exited inside a callback")
        guard finished else {
            // The hung flush still uses the hub and may yet release the probe: leak both.
            _ = Unmanaged.passRetained(hub)
            _ = Unmanaged.passRetained(exiting)
            return
        }
        #expect(flush.value == CKVO_OK)
        #expect(exiting.releases == 1)
        // The hub keeps working afterwards.
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key)
        hub.did(fake(0), key)
        #expect(probe.calls == 1)
    }

    @Test func threadExitingInsideCallbackDoesNotBlockStrictUnobserveOrDestroy() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let exiting = Probe()
        let other = Probe()
        var token: ckvo_token_t = .none
        let otherToken = hub.mustObserve(other, object: fake(0), key: key)
        #expect(ckvots_thread_exit_in_callback(raw, fake(0), key, exiting.raw, &token) == 0)

        let sync = Box<ckvo_status_t?>(nil)
        let syncFinished = finishes(within: 60) { sync.value = ckvo_unobserve_sync(raw, token) }
        #expect(syncFinished, "ckvo_unobserve_sync waited forever for an exited thread")
        guard syncFinished else {
            _ = Unmanaged.passRetained(hub)
            _ = Unmanaged.passRetained(exiting)
            return
        }
        #expect(sync.value == CKVO_OK)
        #expect(hub.unobserve(otherToken) == CKVO_OK)

        let destroyed = Box<ckvo_status_t?>(nil)
        let destroyFinished = finishes(within: 60) { destroyed.value = hub.destroy() }
        #expect(destroyFinished, "ckvo_hub_destroy waited forever for an exited thread")
        guard destroyFinished else {
            _ = Unmanaged.passRetained(exiting)
            return
        }
        #expect(destroyed.value == CKVO_OK)
        #expect(exiting.releases == 1)
        #expect(other.releases == 1)
    }
}

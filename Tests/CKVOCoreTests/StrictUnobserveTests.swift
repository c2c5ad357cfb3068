// SPEC §2.11: ckvo_unobserve_sync waits for dispatches already running on other threads, and
// refuses with CKVO_EDEADLK (removing nothing) from inside a callback. The other waiting calls,
// ckvo_hub_flush and ckvo_hub_destroy, refuse inside a callback the same way.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct StrictUnobserveTests {
    @Test func unobserveSyncInsideCallbackReportsDeadlockAndKeepsTheObservation() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let token = TokenCell()
        let otherToken = TokenCell()
        let statuses = Box<[ckvo_status_t]>([])
        let probe = Probe()
        probe.onChange = { _ in
            statuses.value.append(ckvo_unobserve_sync(raw, token.value))
            statuses.value.append(ckvo_unobserve_sync(raw, otherToken.value))
        }
        token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key)
        let other = Probe()
        otherToken.pointer.pointee = hub.mustObserve(other, object: fake(1), key: key)

        hub.did(fake(0), key)

        #expect(statuses.value == [CKVO_EDEADLK, CKVO_EDEADLK])
        probe.onChange = nil
        hub.did(fake(0), key)
        hub.did(fake(1), key)
        #expect(probe.calls == 2, "the observation was removed despite CKVO_EDEADLK")
        #expect(other.calls == 1)
        #expect(hub.stats().observations == 2)
        #expect(hub.unobserve(token.value) == CKVO_OK)
    }

    @Test func unobserveSyncOutsideCallbackRemovesAndReleasesOnce() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(ckvo_unobserve_sync(hub.raw, token) == CKVO_OK)
        hub.did(fake(0), key)
        #expect(probe.calls == 0)
        #expect(ckvo_unobserve_sync(hub.raw, token) == CKVO_ENOENT)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 1)
    }

    @Test func unobserveSyncWaitsForACallbackRunningOnAnotherThread() {
        let hub = TestHub()
        let probe = Probe()
        let outcome = strictRemovalDuringCallback(hub, probe) { _, _ in }

        #expect(outcome.status == CKVO_OK)
        #expect(!outcome.returnedWhileInside, "ckvo_unobserve_sync returned while the callback ran")
        #expect(probe.calls == 1)
    }

    @Test func unobserveSyncWaitsForACallbackThatDeferredItsOwnRemoval() {
        let hub = TestHub()
        let probe = Probe()
        // The callback removes itself the lock-free way first, so the strict
        // removal that follows finds nothing left to remove.
        let outcome = strictRemovalDuringCallback(hub, probe) { raw, token in
            _ = ckvo_unobserve_deferred(raw, token)
        }

        #expect(outcome.status == CKVO_ENOENT)
        #expect(!outcome.returnedWhileInside, "ckvo_unobserve_sync returned while the callback ran")
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 1)
    }

    @Test func flushInsideCallbackReportsDeadlock() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let status = Box<ckvo_status_t?>(nil)
        let probe = Probe()
        probe.onChange = { _ in status.value = ckvo_hub_flush(raw) }
        _ = hub.mustObserve(probe, object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(status.value == CKVO_EDEADLK)
    }

    @Test func hubDestroyInsideCallbackReportsDeadlockAndDestroysNothing() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let status = Box<ckvo_status_t?>(nil)
        let probe = Probe()
        probe.onChange = { _ in
            if status.value == nil { status.value = ckvo_hub_destroy(raw) }
        }
        _ = hub.mustObserve(probe, object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(status.value == CKVO_EDEADLK)
        #expect(probe.releases == 0)
        #expect(hub.did(fake(0), key) == CKVO_OK, "the hub is still alive")
        #expect(probe.calls == 2)
        #expect(hub.stats().observations == 1)
    }
}

/// Registers `probe` on `hub`, dispatches a change to it on one thread and,
/// once its callback has run `first` (with the hub and the observation's
/// token; capturing `hub` would make a cycle through `probe`), calls
/// `ckvo_unobserve_sync` on another. The callback stays inside until that
/// strict removal has started, then a while longer, so a removal that does
/// not wait returns while the callback is still running. Returns the
/// removal's status and whether it returned while the callback ran.
private func strictRemovalDuringCallback(
    _ hub: TestHub, _ probe: Probe, first: @escaping (OpaquePointer, ckvo_token_t) -> Void
) -> (status: ckvo_status_t?, returnedWhileInside: Bool) {
    let raw = hub.raw
    let key = hub.key("value")
    let token = TokenCell()
    let entered = AtomicCounter()
    let syncStarted = AtomicCounter()
    let syncReturned = AtomicCounter()
    let returnedWhileInside = AtomicCounter()
    probe.onChange = { _ in
        first(raw, token.value)
        entered.next()
        var spins = 0
        while syncStarted.value == 0 && spins < 50_000_000 { spins += 1 }
        for _ in 0..<2_000 {
            if syncReturned.value != 0 { break }
            yieldThread()
        }
        if syncReturned.value != 0 { returnedWhileInside.next() }
    }
    token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key)
    let status = Box<ckvo_status_t?>(nil)

    runThreads(2) { index in
        if index == 0 {
            _ = announce(ckvo_did_change, raw, fake(0), key)
        } else {
            while entered.value == 0 { yieldThread() }
            syncStarted.next()
            status.value = ckvo_unobserve_sync(raw, token.value)
            syncReturned.next()
        }
    }
    return (status.value, returnedWhileInside.value != 0)
}

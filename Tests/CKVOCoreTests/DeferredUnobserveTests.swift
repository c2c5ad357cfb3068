// ckvo_unobserve_deferred (the dispatch-path removal of SPEC §2.10): lock-free, safe inside a
// callback; later dispatches skip the observation; it is removed and released by the next
// writer operation, exactly once.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct DeferredUnobserveTests {
    /// A one-shot observer may be called (by a dispatch on another thread) before its
    /// registration has returned; its ckvo_unobserve_deferred then must still remove it.
    /// Contends on purpose: one thread registers while another announces without pause.
    @Test func selfRemovingObserverCalledBeforeItsRegistrationReturnsIsRemoved() {
        let hub = TestHub()
        let count = ckvots_sanitizer_active() ? 200_000 : 3_000_000
        var refused = 0
        var called = 0
        #expect(ckvots_self_removal_race(hub.raw, hub.key("value"), count, &refused, &called) == 0)
        #expect(called == count)
        #expect(refused == 0, "a self-removal was refused: the observer stays registered")
        #expect(hub.stats().observations == 0)
    }

    @Test func deferredUnobserveInsideCallbackSkipsLaterDispatches() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let token = TokenCell()
        let status = Box<ckvo_status_t?>(nil)
        let probe = Probe()
        probe.onChange = { _ in
            if status.value == nil { status.value = ckvo_unobserve_deferred(raw, token.value) }
        }
        token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        hub.did(fake(0), key)
        #expect(status.value == CKVO_OK)
        hub.will(fake(0), key)
        hub.did(fake(0), key)

        #expect(probe.calls == 1)
    }

    /// SPEC §2.11 for the dispatch-path removal: once ckvo_unobserve_deferred has returned on
    /// one thread, no dispatch that starts later, on any thread, calls the observation.
    @Test func noDispatchStartingAfterDeferredUnobserveReturnsCallsItOnAnyThread() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let dispatchers = 4
        let threadIDs = (0..<dispatchers).map { _ in AtomicCounter() }
        // Per dispatcher: 1 while its current dispatch started after the removal returned.
        let startedAfterRemoval = (0..<dispatchers).map { _ in AtomicCounter() }
        let lateCalls = AtomicCounter()
        let rounds = iterations(50, stress: 2_000)
        for _ in 0..<rounds {
            let token = TokenCell()
            let removed = AtomicCounter()
            let probe = Probe()
            probe.onChange = { _ in
                let me = currentThreadID()
                if let i = threadIDs.firstIndex(where: { $0.value == me }),
                    startedAfterRemoval[i].value != 0
                {
                    lateCalls.next()
                }
                if ckvo_unobserve_deferred(raw, token.value) == CKVO_OK { removed.value = 1 }
            }
            token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key)
            runThreads(dispatchers) { i in
                threadIDs[i].value = currentThreadID()
                for _ in 0..<5 {
                    startedAfterRemoval[i].value = removed.value
                    _ = announce(ckvo_did_change, raw, fake(0), key)
                }
                startedAfterRemoval[i].value = 0
            }
            probe.onChange = nil
        }
        #expect(hub.flush() == CKVO_OK)

        #expect(lateCalls.value == 0)
        #expect(hub.stats().observations == 0)
    }

    @Test func deferredUnobserveReleasesOnceAfterTheNextWriterAndFlush() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let token = TokenCell()
        let probe = Probe()
        probe.onChange = { _ in _ = ckvo_unobserve_deferred(raw, token.value) }
        token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key)
        hub.did(fake(0), key)
        #expect(probe.releases == 0, "released inside the dispatch that deferred it")

        // The next writer operation performs the queued removal; flush runs the release.
        let writer = hub.mustObserve(Probe(), object: fake(1), key: key)
        #expect(hub.flush() == CKVO_OK)

        #expect(probe.releases == 1)
        #expect(hub.stats().observations == 1)
        #expect(hub.unobserve(writer) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        hub.destroy()
        #expect(probe.releases == 1)
    }

    @Test func deferredUnobserveSkipsALaterObserverInTheSameDispatch() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let victim = TokenCell()
        let first = Probe(recorder, id: 1)
        first.onChange = { _ in _ = ckvo_unobserve_deferred(raw, victim.value) }
        _ = hub.mustObserve(first, object: fake(0), key: key)
        victim.pointer.pointee = hub.mustObserve(Probe(recorder, id: 2), object: fake(0), key: key)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(recorder.order == [1, 3])
    }

    @Test func deferredUnobserveTwiceReportsNotFound() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_OK)
        #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_ENOENT)
        hub.did(fake(0), key)
        #expect(probe.calls == 0, "deferred outside a callback also stops delivery")
    }

    @Test func unobserveAfterDeferredUnobserveDoesNotReleaseTwice() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_OK)
        let second = hub.unobserve(token)
        #expect(second == CKVO_ENOENT, "already removed (queued) by ckvo_unobserve_deferred")
        #expect(hub.flush() == CKVO_OK)
        _ = hub.mustObserve(Probe(), object: fake(1), key: key)  // a writer op, in case flush did not
        #expect(hub.flush() == CKVO_OK)
        hub.destroy()

        #expect(probe.releases == 1)
    }

    @Test func deferredUnobserveIsRemovedByUnobserveObjectOnlyOnce() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)
        #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_OK)

        _ = ckvo_unobserve_object(hub.raw, fake(0))  // OK or ENOENT: it is already dead
        #expect(hub.flush() == CKVO_OK)
        hub.destroy()

        #expect(probe.releases == 1)
    }
}

// SPEC §2.5: a change is delivered to the observers registered when its dispatch starts; one
// added during the dispatch gets nothing, one removed before its turn (on any thread) is not called.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct SnapshotTests {
    @Test func observerAddedDuringDispatchGetsNothingForThatChange() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let adder = Probe(recorder, id: 1)
        let late = Probe(recorder, id: 2)
        let added = Box<ckvo_status_t?>(nil)
        adder.onChange = { _ in
            if added.value == nil {
                added.value = ckvo_observe(
                    raw, fake(0), key, 0, nil, ckvots_probe_callback, late.context, ckvots_probe_release, nil)
            }
        }
        _ = hub.mustObserve(adder, object: fake(0), key: key)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: fake(0), key: key)

        hub.did(fake(0), key)
        #expect(added.value == CKVO_OK)
        #expect(recorder.order == [1, 3])

        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == [1, 3, 2], "the late observer receives the next change")
        hub.destroy()
        #expect(late.releases == 1)
    }

    /// A callback removes enough observers that the list is compacted into a new one while the
    /// dispatch still walks the old one; a later removal clears its entry only in the new list,
    /// so the dispatch must skip it by its state.
    @Test func observerRemovedAfterTheListWasCompactedMidDispatchIsNotCalled() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let remover = Probe(recorder, id: 0)
        let probes = (1..<40).map { Probe(recorder, id: UInt64($0)) }
        let tokens = Box<[ckvo_token_t]>([])
        let statuses = Box<[ckvo_status_t]>([])
        remover.onChange = { _ in
            guard statuses.value.isEmpty else { return }
            // 21 of 40 cleared: more dead than live entries, past the compaction threshold.
            for index in 0..<21 { statuses.value.append(ckvo_unobserve(raw, tokens.value[index])) }
            // Registered last: its entry in the list this dispatch walks is never cleared.
            statuses.value.append(ckvo_unobserve(raw, tokens.value[38]))
        }
        _ = hub.mustObserve(remover, object: fake(0), key: key)
        for probe in probes { tokens.value.append(hub.mustObserve(probe, object: fake(0), key: key)) }

        hub.did(fake(0), key)

        #expect(statuses.value == Array(repeating: CKVO_OK, count: 22))
        #expect(recorder.order == [0] + Array(22..<39).map { UInt64($0) })
        #expect(probes[38].calls == 0)
        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == [0] + Array(22..<39).map { UInt64($0) })
    }

    @Test func observerRemovedByAnEarlierCallbackIsNotCalled() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let remover = Probe(recorder, id: 1)
        let victimToken = TokenCell()
        let removed = Box<ckvo_status_t?>(nil)
        remover.onChange = { _ in removed.value = ckvo_unobserve(raw, victimToken.value) }
        _ = hub.mustObserve(remover, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        _ = hub.mustObserve(Probe(recorder, id: 2), object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        victimToken.pointer.pointee = hub.mustObserve(
            Probe(recorder, id: 3), object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        _ = hub.mustObserve(Probe(recorder, id: 4), object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        hub.will(fake(0), key)

        #expect(removed.value == CKVO_OK)
        #expect(recorder.order == [1, 2, 4])
        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == [1, 2, 4])
    }

    @Test func observerRemovedFromAnotherThreadDuringDispatchIsNotCalled() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let first = Probe(recorder, id: 1)
        let victimToken = TokenCell()
        let removed = Box<ckvo_status_t?>(nil)
        // The first callback has another thread remove the second observation, and waits for it.
        first.onChange = { _ in
            runThreads(1) { _ in removed.value = ckvo_unobserve(raw, victimToken.value) }
        }
        _ = hub.mustObserve(first, object: fake(0), key: key)
        victimToken.pointer.pointee = hub.mustObserve(Probe(recorder, id: 2), object: fake(0), key: key)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(removed.value == CKVO_OK)
        #expect(recorder.order == [1, 3])
    }

    @Test func observerRemovingItselfDoesNotSkipLaterObservers() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let selfRemover = Probe(recorder, id: 2)
        let token = TokenCell()
        selfRemover.onChange = { _ in _ = ckvo_unobserve(raw, token.value) }
        _ = hub.mustObserve(Probe(recorder, id: 1), object: fake(0), key: key)
        token.pointer.pointee = hub.mustObserve(selfRemover, object: fake(0), key: key)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: fake(0), key: key)

        hub.did(fake(0), key)
        hub.did(fake(0), key)

        #expect(recorder.order == [1, 2, 3, 1, 3])
        #expect(selfRemover.calls == 1)
    }

    @Test func removingAnAlreadyCalledObserverDoesNotDisturbTheDispatch() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let token = TokenCell()
        let remover = Probe(recorder, id: 2)
        remover.onChange = { _ in _ = ckvo_unobserve(raw, token.value) }
        token.pointer.pointee = hub.mustObserve(Probe(recorder, id: 1), object: fake(0), key: key)
        _ = hub.mustObserve(remover, object: fake(0), key: key)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(recorder.order == [1, 2, 3])
    }
}

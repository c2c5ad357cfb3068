// SPEC §2.2, §2.3, §2.6: change kinds and their indexes, every change notifies, and delivery is
// synchronous on the announcing thread.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct ChangeTests {
    @Test(arguments: [CKVO_KIND_INSERTION, CKVO_KIND_REMOVAL, CKVO_KIND_REPLACEMENT])
    func collectionKindsCarryTheirIndexes(kind: ckvo_kind_t) {
        let hub = TestHub()
        let key = hub.key("items")
        let recorder = Recorder()
        _ = hub.mustObserve(Probe(recorder, id: 1), object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        #expect(hub.will(fake(0), key, kind: kind, indexes: [1, 3, 5]) == CKVO_OK)
        #expect(hub.did(fake(0), key, kind: kind, indexes: [1, 3, 5]) == CKVO_OK)

        let events = recorder.events
        #expect(events.count == 2)
        for e in events {
            #expect(e.kind == kind)
            #expect(e.indexes == [1, 3, 5])
            #expect(e.object == fake(0))
            #expect(e.key == key)
        }
        #expect(events.map(\.isPrior) == [true, false])
    }

    @Test func settingCarriesNoIndexes() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        _ = hub.mustObserve(Probe(recorder, id: 1), object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(recorder.events.count == 1)
        #expect(recorder.events.first?.kind == CKVO_KIND_SETTING)
        #expect(recorder.events.first?.indexes == nil)
    }

    @Test func everyChangeNotifiesEvenWhenTheValueIsEqual() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_NEW | CKVO_OPTION_OLD)

        for _ in 0..<100 { hub.did(fake(0), key, old: fake(5), new: fake(5)) }
        for _ in 0..<100 { hub.did(fake(0), key) }

        #expect(probe.calls == 200)
    }

    @Test func changeIsDeliveredSynchronouslyOnTheAnnouncingThread() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let probe = Probe(recorder, id: 1)
        _ = hub.mustObserve(probe, object: fake(0), key: key)
        let announcer = Box<UInt64>(0)
        let callsWhenDidReturned = Box<UInt64>(0)

        runThreads(1) { _ in
            announcer.value = currentThreadID()
            _ = announce(ckvo_did_change, raw, fake(0), key)
            callsWhenDidReturned.value = probe.calls
        }

        #expect(callsWhenDidReturned.value == 1, "the callback had not run when did_change returned")
        #expect(recorder.events.map(\.thread) == [announcer.value])
    }

    @Test func changesOfOtherKeysAndObjectsDoNotNotify() {
        let hub = TestHub()
        let key = hub.key("value")
        let other = hub.key("other")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key)

        hub.did(fake(1), key)
        hub.did(fake(0), other)
        hub.did(nil, key)
        #expect(probe.calls == 0)
        hub.did(fake(0), key)
        #expect(probe.calls == 1)
    }
}

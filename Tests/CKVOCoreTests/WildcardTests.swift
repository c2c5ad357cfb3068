// SPEC §2.15 and §3: an observation with a NULL object receives the key's changes of every
// object (named notifications without a sender filter); a change announced with a NULL object
// reaches only those. Specific and wildcard observers share one registration order.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct WildcardTests {
    @Test func wildcardObserverReceivesChangesOfEveryObject() {
        let hub = TestHub()
        let key = hub.key("note")
        let recorder = Recorder()
        _ = hub.mustObserve(Probe(recorder, id: 1), object: nil, key: key)

        hub.did(fake(0), key)
        hub.did(fake(1), key)
        hub.did(nil, key)

        #expect(recorder.events.map(\.object) == [fake(0), fake(1), nil])
    }

    @Test func changeWithNullObjectReachesOnlyWildcardObservers() {
        let hub = TestHub()
        let key = hub.key("note")
        let specific = Probe()
        let wildcard = Probe()
        _ = hub.mustObserve(specific, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        _ = hub.mustObserve(wildcard, object: nil, key: key, options: CKVO_OPTION_PRIOR)

        hub.will(nil, key)
        hub.did(nil, key)

        #expect(specific.calls == 0)
        #expect(wildcard.calls == 2)
    }

    @Test func specificAndWildcardObserversShareOneRegistrationOrder() {
        let hub = TestHub()
        let key = hub.key("note")
        let recorder = Recorder()
        // Interleave: specific 1, wildcard 2, specific 3, wildcard 4, other object 5, wildcard 6.
        let objects: [UnsafeRawPointer?] = [fake(0), nil, fake(0), nil, fake(1), nil]
        for (i, object) in objects.enumerated() {
            _ = hub.mustObserve(Probe(recorder, id: UInt64(i + 1)), object: object, key: key, options: CKVO_OPTION_PRIOR)
        }

        hub.will(fake(0), key)
        #expect(recorder.order == [1, 2, 3, 4, 6])
        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == [1, 2, 3, 4, 6])
        recorder.clear()
        hub.did(fake(1), key)
        #expect(recorder.order == [2, 4, 5, 6])
    }

    @Test func orderHoldsWhenWildcardsRegisterAfterRemovals() {
        let hub = TestHub()
        let key = hub.key("note")
        let recorder = Recorder()
        let first = hub.mustObserve(Probe(recorder, id: 1), object: nil, key: key)
        _ = hub.mustObserve(Probe(recorder, id: 2), object: fake(0), key: key)
        #expect(hub.unobserve(first) == CKVO_OK)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: nil, key: key)
        _ = hub.mustObserve(Probe(recorder, id: 4), object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(recorder.order == [2, 3, 4])
    }

    @Test func wildcardOnOneKeyIgnoresOtherKeys() {
        let hub = TestHub()
        let key = hub.key("note")
        let other = hub.key("other")
        let wildcard = Probe()
        _ = hub.mustObserve(wildcard, object: nil, key: key)

        hub.did(fake(0), other)
        hub.did(nil, other)

        #expect(wildcard.calls == 0)
    }

    @Test func unobservingAWildcardStopsDelivery() {
        let hub = TestHub()
        let key = hub.key("note")
        let wildcard = Probe()
        let token = hub.mustObserve(wildcard, object: nil, key: key)
        hub.did(fake(0), key)

        #expect(hub.unobserve(token) == CKVO_OK)
        hub.did(fake(0), key)
        hub.did(nil, key)

        #expect(wildcard.calls == 1)
        #expect(hub.flush() == CKVO_OK)
        #expect(wildcard.releases == 1)
    }
}

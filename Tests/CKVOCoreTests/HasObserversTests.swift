// SPEC §3: ckvo_has_observers may say "maybe" but never false while a matching observation
// exists; it is false for a key nobody observes and again once its observations are gone.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct HasObserversTests {
    @Test func hasObserversFollowsRegistrationAndRemoval() {
        let hub = TestHub()
        let key = hub.key("value")
        #expect(!hub.hasObservers(fake(0), key))

        let token = hub.mustObserve(Probe(), object: fake(0), key: key)
        #expect(hub.hasObservers(fake(0), key))

        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(!hub.hasObservers(fake(0), key))
    }

    @Test func hasObserversIsTrueForEveryObjectWhileAWildcardObserves() {
        let hub = TestHub()
        let key = hub.key("note")
        let token = hub.mustObserve(Probe(), object: nil, key: key)

        for i in 0..<100 { #expect(hub.hasObservers(fake(i), key)) }
        #expect(hub.hasObservers(nil, key))

        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(!hub.hasObservers(fake(0), key))
    }

    @Test func hasObserversIsNeverFalseForAnyObservedObject() {
        let hub = TestHub()
        let key = hub.key("value")
        let tokens = (0..<500).map { hub.mustObserve(Probe(), object: fake($0), key: key) }

        #expect((0..<500).allSatisfy { hub.hasObservers(fake($0), key) })
        for (i, token) in tokens.enumerated() where i % 2 == 0 { #expect(hub.unobserve(token) == CKVO_OK) }
        #expect((0..<500).filter { $0 % 2 == 1 }.allSatisfy { hub.hasObservers(fake($0), key) })
    }

    @Test func hasObserversIsFalseForAnUnobservedKey() {
        let hub = TestHub()
        let observed = hub.key("observed")
        let unobserved = hub.key("unobserved")
        _ = hub.mustObserve(Probe(), object: fake(0), key: observed)

        #expect(!hub.hasObservers(fake(0), unobserved))
        #expect(!hub.hasObservers(nil, unobserved))
    }

    @Test func keyProbeCountsObservationsAndPriorObservations() throws {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = try #require(ckvo_key_probe(hub.raw, key))
        #expect(!ckvo_probe_has_observers(probe))

        let plain = hub.mustObserve(Probe(), object: fake(0), key: key)
        #expect(ckvo_probe_has_observers(probe))
        #expect(!ckvo_probe_has_prior_observers(probe))

        let prior = hub.mustObserve(Probe(), object: nil, key: key, options: CKVO_OPTION_PRIOR)
        #expect(ckvo_probe_has_prior_observers(probe))

        #expect(hub.unobserve(prior) == CKVO_OK)
        #expect(!ckvo_probe_has_prior_observers(probe))
        #expect(ckvo_probe_has_observers(probe))
        #expect(hub.unobserve(plain) == CKVO_OK)
        #expect(!ckvo_probe_has_observers(probe))
    }

    @Test func keyProbeOfAnInvalidKeyIsNil() {
        let hub = TestHub()
        #expect(ckvo_key_probe(hub.raw, 0) == nil)
        #expect(ckvo_key_probe(hub.raw, 999) == nil)
        #expect(ckvo_key_probe(nil, 1) == nil)
    }

    /// The setters' inline check (the key's probe) while other threads register and remove
    /// observations of the same key every way the API allows, some removing themselves from
    /// their first callback: an observation registered throughout keeps the probe above zero
    /// and receives every announcement, and the counters end exactly where they began.
    @Test func keyProbeNeverReadsZeroWhileOtherThreadsRegisterAndRemoveOnTheSameKey() {
        let hub = TestHub()
        let key = hub.key("value")
        let iterations = ckvots_sanitizer_active() ? 20_000 : 200_000
        var result = ckvots_probe_contention_result()
        #expect(ckvots_probe_contention(hub.raw, key, 3, iterations, &result) == 0)
        #expect(result.failures == 0)
        #expect(result.zero_reads == 0, "the probe said nobody observes the key")
        #expect(result.announced > 0)
        #expect(result.delivered == result.announced)
        #expect(result.observations_after == 1)
        #expect(result.prior_observations_after == 0)
        #expect(hub.stats().observations == 0)
    }
}

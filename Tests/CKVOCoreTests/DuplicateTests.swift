// SPEC §2.9 and §3: registering the same owner, object, key, callback and context again is a
// no-op reporting CKVO_EEXIST with the existing token; its context is never released for it.
// CKVO_OPTION_UNIQUE_CONTEXT promises a fresh context and skips the check; a broken promise
// makes two independent observations, never a crash.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct DuplicateTests {
    @Test func duplicateRegistrationReportsAlreadyObservingWithTheExistingToken() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key, owner: fake(9))

        let (status, duplicate) = hub.observe(probe, object: fake(0), key: key, owner: fake(9))

        #expect(status == CKVO_EEXIST)
        #expect(duplicate == token)
        #expect(hub.stats().observations == 1)
    }

    @Test func duplicateRegistrationDoesNotReleaseItsContext() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)
        #expect(hub.observe(probe, object: fake(0), key: key).status == CKVO_EEXIST)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 0)

        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 1, "released once per successful observe, never for the duplicate")
    }

    @Test func duplicateRegistrationDoesNotDeliverTwice() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key)
        for _ in 0..<3 { _ = hub.observe(probe, object: fake(0), key: key) }

        hub.did(fake(0), key)

        #expect(probe.calls == 1)
    }

    @Test func duplicateWithDifferentOptionsIsStillADuplicate() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_NEW)

        let (status, existing) = hub.observe(
            probe, object: fake(0), key: key, options: CKVO_OPTION_OLD | CKVO_OPTION_INITIAL)

        #expect(status == CKVO_EEXIST)
        #expect(existing == token)
        #expect(probe.calls == 0, "a failed observe called its callback (initial)")
    }

    @Test func differingInAnyIdentityPartIsNotADuplicate() {
        let hub = TestHub()
        let key = hub.key("value")
        let otherKey = hub.key("other")
        let probe = Probe()
        let otherContext = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key, owner: fake(9))
        var tokens: Set<ckvo_token_t> = [token]

        tokens.insert(hub.mustObserve(otherContext, object: fake(0), key: key, owner: fake(9)))
        tokens.insert(hub.mustObserve(probe, object: fake(1), key: key, owner: fake(9)))
        tokens.insert(hub.mustObserve(probe, object: fake(0), key: otherKey, owner: fake(9)))
        tokens.insert(hub.mustObserve(probe, object: fake(0), key: key, owner: fake(10)))
        tokens.insert(hub.mustObserve(probe, object: fake(0), key: key, owner: nil))
        tokens.insert(hub.mustObserve(probe, object: nil, key: key, owner: fake(9)))
        var viaOtherCallback: ckvo_token_t = .none
        let otherCallback: ckvo_callback_t = { change, context in ckvots_probe_callback(change, context) }
        #expect(
            ckvo_observe(
                hub.raw, fake(0), key, 0, fake(9), otherCallback, probe.context, ckvots_probe_release,
                &viaOtherCallback) == CKVO_OK)
        tokens.insert(viaOtherCallback)

        #expect(tokens.count == 8)
        #expect(hub.stats().observations == 8)
    }

    @Test func reregistrationAfterRemovalSucceedsWithANewToken() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let first = hub.mustObserve(probe, object: fake(0), key: key)
        #expect(hub.unobserve(first) == CKVO_OK)

        let second = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(second != first)
        hub.did(fake(0), key)
        #expect(probe.calls == 1)
        hub.destroy()
        #expect(probe.releases == 2)
    }

    @Test func reregistrationAfterADeferredRemovalSucceedsWithANewToken() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let token = TokenCell()
        let probe = Probe()
        probe.onChange = { _ in _ = ckvo_unobserve_deferred(raw, token.value) }
        let first = hub.mustObserve(probe, object: fake(0), key: key)
        token.pointer.pointee = first
        hub.did(fake(0), key)

        // The same identity again, while the removal is still queued.
        probe.onChange = nil
        let second = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(second != first)
        #expect(hub.stats().observations == 1)
        hub.did(fake(0), key)
        #expect(probe.calls == 2)
        hub.destroy()
        #expect(probe.releases == 2)
    }

    @Test func duplicateWildcardRegistrationReportsAlreadyObserving() {
        let hub = TestHub()
        let key = hub.key("note")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: nil, key: key)

        let (status, existing) = hub.observe(probe, object: nil, key: key)

        #expect(status == CKVO_EEXIST)
        #expect(existing == token)
    }

    @Test func uniqueContextRegistrationsAreObservedRemovedAndReleasedLikeOthers() {
        let hub = TestHub()
        let key = hub.key("value")
        let probes = (0..<3).map { _ in Probe() }
        let tokens = probes.map {
            hub.mustObserve($0, object: fake(0), key: key, options: CKVO_OPTION_UNIQUE_CONTEXT | CKVO_OPTION_NEW)
        }

        hub.did(fake(0), key)
        #expect(probes.map(\.calls) == [1, 1, 1])
        #expect(hub.unobserve(tokens[1]) == CKVO_OK)
        #expect(hub.unobserve(tokens[1]) == CKVO_ENOENT)
        hub.did(fake(0), key)
        #expect(probes.map(\.calls) == [2, 1, 2])
        #expect(hub.flush() == CKVO_OK)
        #expect(probes.map(\.releases) == [0, 1, 0])
        hub.destroy()
        #expect(probes.map(\.releases) == [1, 1, 1])
    }

    @Test func brokenUniqueContextPromiseMakesTwoObservationsEachReleasedOnce() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let first = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_UNIQUE_CONTEXT)

        let (status, second) = hub.observe(probe, object: fake(0), key: key, options: CKVO_OPTION_UNIQUE_CONTEXT)

        #expect(status == CKVO_OK)
        #expect(second != first && second != .none)
        hub.did(fake(0), key)
        #expect(probe.calls == 2)
        #expect(hub.unobserve(first) == CKVO_OK)
        #expect(hub.unobserve(second) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 2, "one release per observation")
    }

    @Test func aUniqueContextRegistrationIsNeverFoundAsADuplicate() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let unique = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_UNIQUE_CONTEXT)

        // Same identity without the promise: the promised one is not indexed, so this registers.
        let checked = hub.mustObserve(probe, object: fake(0), key: key)
        let (status, existing) = hub.observe(probe, object: fake(0), key: key)

        #expect(checked != unique)
        #expect(status == CKVO_EEXIST, "the checked one is indexed")
        #expect(existing == checked)
        #expect(hub.stats().observations == 2)
    }
}

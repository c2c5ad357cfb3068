// SPEC §2.10 and §3: a context is released exactly once per successful observe, after removal
// and a grace period (flush / destroy), never for a failed observe; unobserve_object and
// unobserve_owner remove exactly what they name; the default hub cannot be destroyed.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct LifetimeTests {
    @Test func releaseRunsExactlyOnceAfterUnobserveAndFlush() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 1)
        #expect(hub.flush() == CKVO_OK)
        hub.destroy()
        #expect(probe.releases == 1, "released again by a later flush or destroy")
    }

    @Test func releaseDoesNotRunWhileObserved() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key)

        hub.did(fake(0), key)
        #expect(hub.flush() == CKVO_OK)
        // Other observations coming and going must not release this one.
        for i in 1...50 { #expect(hub.unobserve(hub.mustObserve(Probe(), object: fake(i), key: key)) == CKVO_OK) }
        #expect(hub.flush() == CKVO_OK)

        #expect(probe.releases == 0)
        hub.did(fake(0), key)
        #expect(probe.calls == 2)
    }

    @Test func releaseNeverRunsForAFailedObserve() {
        let hub = TestHub()
        let key = hub.key("value")
        let existing = Probe()
        _ = hub.mustObserve(existing, object: fake(0), key: key)
        let failed = Probe()

        #expect(hub.observe(failed, object: fake(0), key: 0).status == CKVO_EINVAL)
        #expect(hub.observe(failed, object: fake(0), key: 0xFFFF).status == CKVO_EINVAL)
        #expect(hub.observe(failed, object: fake(0), key: key, options: 1 << 7).status == CKVO_EINVAL)
        #expect(hub.observe(existing, object: fake(0), key: key).status == CKVO_EEXIST)
        #expect(hub.flush() == CKVO_OK)
        hub.destroy()

        #expect(failed.releases == 0)
        #expect(failed.calls == 0)
        #expect(existing.releases == 1, "the duplicate must not add a release")
    }

    @Test func hubDestroyReleasesEveryRemainingContextOnce() {
        let hub = TestHub()
        let key = hub.key("value")
        let other = hub.key("other")
        let observed = (0..<20).map { Probe(id: UInt64($0)) }
        for (i, probe) in observed.enumerated() {
            _ = hub.mustObserve(probe, object: i % 2 == 0 ? fake(i) : nil, key: i % 3 == 0 ? key : other)
        }
        let removedNotFlushed = Probe()
        #expect(hub.unobserve(hub.mustObserve(removedNotFlushed, object: fake(0), key: key)) == CKVO_OK)

        #expect(hub.destroy() == CKVO_OK)

        #expect(observed.allSatisfy { $0.releases == 1 })
        #expect(removedNotFlushed.releases == 1)
    }

    @Test func releaseMayCallBackIntoTheHub() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let probe = Probe()
        let reborn = Probe()
        let statuses = Box<[ckvo_status_t]>([])
        probe.onRelease = {
            var token: ckvo_token_t = .none
            statuses.value.append(
                ckvo_observe(
                    raw, fake(0), key, 0, nil, ckvots_probe_callback, reborn.context, ckvots_probe_release,
                    &token))
            statuses.value.append(announce(ckvo_did_change, raw, fake(0), key))
            statuses.value.append(ckvo_unobserve(raw, token))
        }
        let token = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)

        #expect(probe.releases == 1)
        #expect(statuses.value == [CKVO_OK, CKVO_OK, CKVO_OK])
        #expect(reborn.calls == 1)
        #expect(hub.flush() == CKVO_OK)
        #expect(reborn.releases == 1)
    }

    @Test func unobserveObjectRemovesEveryObservationOfThatObject() {
        let hub = TestHub()
        let keys = [hub.key("a"), hub.key("b"), hub.key("c")]
        let probes = (0..<6).map { Probe(id: UInt64($0)) }
        for (i, probe) in probes.enumerated() {
            _ = hub.mustObserve(
                probe, object: fake(0), key: keys[i % 3], options: CKVO_OPTION_PRIOR, owner: fake(100 + i % 2))
        }

        #expect(ckvo_unobserve_object(hub.raw, fake(0)) == CKVO_OK)

        for key in keys {
            hub.will(fake(0), key)
            hub.did(fake(0), key)
        }
        #expect(probes.allSatisfy { $0.calls == 0 })
        #expect(hub.stats().observations == 0)
        #expect(ckvo_unobserve_object(hub.raw, fake(0)) == CKVO_ENOENT)
        #expect(hub.flush() == CKVO_OK)
        #expect(probes.allSatisfy { $0.releases == 1 })
    }

    @Test func unobserveObjectLeavesWildcardAndOtherObjectsAlone() {
        let hub = TestHub()
        let key = hub.key("value")
        let doomed = Probe()
        let wildcard = Probe()
        let bystander = Probe()
        _ = hub.mustObserve(doomed, object: fake(0), key: key)
        _ = hub.mustObserve(wildcard, object: nil, key: key)
        _ = hub.mustObserve(bystander, object: fake(1), key: key)

        #expect(ckvo_unobserve_object(hub.raw, fake(0)) == CKVO_OK)
        hub.did(fake(0), key)
        hub.did(fake(1), key)

        #expect(doomed.calls == 0)
        #expect(wildcard.calls == 2)
        #expect(bystander.calls == 1)
        #expect(hub.stats().observations == 2)
    }

    @Test func observationOnAReusedAddressIsUnaffectedByTheEarlierObject() {
        let hub = TestHub()
        let key = hub.key("value")
        let old = Probe()
        let new = Probe()
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { memory.deallocate() }
        let address = UnsafeRawPointer(memory)
        let oldToken = hub.mustObserve(old, object: address, key: key)

        // The first object dies; a second one is created at the same address.
        #expect(ckvo_unobserve_object(hub.raw, address) == CKVO_OK)
        let newToken = hub.mustObserve(new, object: address, key: key)
        hub.did(address, key)

        #expect(old.calls == 0)
        #expect(new.calls == 1)
        #expect(hub.unobserve(oldToken) == CKVO_ENOENT)
        #expect(newToken != oldToken)
        #expect(hub.stats().observations == 1)
        #expect(hub.flush() == CKVO_OK)
        #expect(old.releases == 1)
        #expect(new.releases == 0)
    }

    // A key remembers its newest object slot (dispatch.c): changes must still reach exactly
    // their own object's observers while other objects' slots of the key come and go.
    @Test func changesReachOnlyTheirObjectWhileOtherObjectsOfTheKeyComeAndGo() {
        let hub = TestHub()
        let key = hub.key("value")
        let a = Probe()
        let b = Probe()
        let tokenA = hub.mustObserve(a, object: fake(0), key: key)
        let tokenB = hub.mustObserve(b, object: fake(1), key: key)  // the key's newest slot

        hub.did(fake(0), key)
        hub.did(fake(1), key)
        #expect((a.calls, b.calls) == (1, 1))

        #expect(hub.unobserve(tokenB) == CKVO_OK)  // b's slot goes
        hub.did(fake(0), key)
        hub.did(fake(1), key)
        #expect((a.calls, b.calls) == (2, 1))

        let again = Probe()
        _ = hub.mustObserve(again, object: fake(1), key: key)  // a new slot for object 1
        #expect(hub.unobserve(tokenA) == CKVO_OK)  // the older slot goes
        hub.did(fake(0), key)
        hub.did(fake(1), key)
        hub.did(fake(2), key)
        #expect((a.calls, b.calls, again.calls) == (2, 1, 1))
    }

    @Test func unobserveOwnerRemovesExactlyThatOwnersObservations() {
        let hub = TestHub()
        let key = hub.key("value")
        let other = hub.key("other")
        let mine = [Probe(id: 1), Probe(id: 2), Probe(id: 3)]
        let theirs = [Probe(id: 4), Probe(id: 5)]
        let unowned = Probe(id: 6)
        _ = hub.mustObserve(mine[0], object: fake(0), key: key, owner: fake(50))
        _ = hub.mustObserve(mine[1], object: fake(1), key: other, owner: fake(50))
        _ = hub.mustObserve(mine[2], object: nil, key: key, owner: fake(50))
        _ = hub.mustObserve(theirs[0], object: fake(0), key: key, owner: fake(51))
        _ = hub.mustObserve(theirs[1], object: fake(1), key: other, owner: fake(51))
        _ = hub.mustObserve(unowned, object: fake(0), key: key)

        #expect(ckvo_unobserve_owner(hub.raw, fake(50)) == CKVO_OK)
        hub.did(fake(0), key)
        hub.did(fake(1), other)

        #expect(mine.allSatisfy { $0.calls == 0 })
        #expect(theirs.allSatisfy { $0.calls == 1 })
        #expect(unowned.calls == 1)
        #expect(ckvo_unobserve_owner(hub.raw, fake(50)) == CKVO_ENOENT)
        #expect(ckvo_unobserve_owner(hub.raw, fake(52)) == CKVO_ENOENT)
        #expect(hub.flush() == CKVO_OK)
        #expect(mine.allSatisfy { $0.releases == 1 })
        #expect(theirs.allSatisfy { $0.releases == 0 })
    }

    @Test func statsCountObservationsAndPendingReleases() {
        let hub = TestHub()
        let key = hub.key("value")
        let tokens = (0..<5).map { hub.mustObserve(Probe(), object: fake($0), key: key) }
        #expect(hub.stats().observations == 5)

        for token in tokens.prefix(3) { #expect(hub.unobserve(token) == CKVO_OK) }
        let afterRemoval = hub.stats()
        #expect(afterRemoval.observations == 2)
        #expect(afterRemoval.pending_releases <= 3)

        #expect(hub.flush() == CKVO_OK)
        #expect(hub.stats().pending_releases == 0)
        #expect(hub.stats().observations == 2)
    }

    @Test func defaultHubIsOneHubThatCannotBeDestroyed() throws {
        let hub = try #require(ckvo_hub_default())
        #expect(ckvo_hub_default() == hub)
        #expect(ckvo_hub_destroy(hub) == CKVO_EINVAL)

        // Still usable afterwards. Unique names: other tests may share the default hub.
        let key = ckvo_key_intern(hub, "LifetimeTests.defaultHub", nil)
        #expect(key != 0)
        let probe = Probe()
        var token: ckvo_token_t = .none
        let object = UnsafeRawPointer(probe.raw)
        #expect(
            ckvo_observe(hub, object, key, 0, nil, ckvots_probe_callback, probe.context, ckvots_probe_release, &token)
                == CKVO_OK)
        #expect(announce(ckvo_did_change, hub, object, key) == CKVO_OK)
        #expect(probe.calls == 1)
        #expect(ckvo_unobserve(hub, token) == CKVO_OK)
        #expect(ckvo_hub_flush(hub) == CKVO_OK)
        #expect(probe.releases == 1)
    }
}

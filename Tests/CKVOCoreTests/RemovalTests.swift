// SPEC §2.8 and the token contract: removal never crashes; unknown, stale, forged or
// already-removed tokens report CKVO_ENOENT; tokens are never reused.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct RemovalTests {
    @Test func doubleUnobserveReportsNotFound() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)

        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.unobserve(token) == CKVO_ENOENT)
        #expect(ckvo_unobserve_sync(hub.raw, token) == CKVO_ENOENT)
        #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_ENOENT)
        hub.flush()
        #expect(probe.releases == 1)
    }

    @Test func unobservingATokenNeverIssuedReportsNotFound() {
        let hub = TestHub()
        let key = hub.key("value")
        let token = hub.mustObserve(Probe(), object: fake(0), key: key)

        for (generation, index) in [(1, 0), (1_000, 0), (0, 1), (0, 1_000), (1, 1)] as [(UInt64, UInt64)] {
            let other = ckvo_token_t(generation: token.generation &+ generation, index: token.index &+ index)
            #expect(hub.unobserve(other) == CKVO_ENOENT)
        }
        #expect(hub.stats().observations == 1)
    }

    @Test func forgedTokensReportNotFoundAndRemoveNothing() {
        let hub = TestHub()
        let key = hub.key("value")
        var real = Set<ckvo_token_t>()
        for i in 0..<16 { real.insert(hub.mustObserve(Probe(), object: fake(i), key: key)) }

        var rng = SystemRandomNumberGenerator()
        let words: [UInt64] = [0, 1, 2, 3, .max, .max - 1, 1 << 32, 1 << 63, 0xFFFF_FFFF]
        var forged = words.flatMap { generation in words.map { ckvo_token_t(generation: generation, index: $0) } }
        for _ in 0..<1_000 { forged.append(ckvo_token_t(generation: rng.next(), index: rng.next())) }
        // Another hub's real tokens are forgeries here too.
        let other = TestHub()
        let otherKey = other.key("value")
        for i in 0..<16 { forged.append(other.mustObserve(Probe(), object: fake(i), key: otherKey)) }
        for token in forged where !real.contains(token) {
            #expect(hub.unobserve(token) == CKVO_ENOENT, "forged token \(token)")
            #expect(ckvo_unobserve_sync(hub.raw, token) == CKVO_ENOENT, "forged token \(token)")
            #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_ENOENT, "forged token \(token)")
        }
        #expect(hub.stats().observations == 16)
        #expect(hub.unobserve(.none) == CKVO_ENOENT, "the zero token is never valid")
    }

    @Test func staleTokenDoesNotRemoveANewerObservation() {
        let hub = TestHub()
        let key = hub.key("value")
        let first = Probe()
        let second = Probe()
        let stale = hub.mustObserve(first, object: fake(0), key: key)
        #expect(hub.unobserve(stale) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)  // let the engine recycle whatever slot it used

        let fresh = hub.mustObserve(second, object: fake(0), key: key)
        #expect(fresh != stale)
        #expect(hub.unobserve(stale) == CKVO_ENOENT)
        hub.did(fake(0), key)
        #expect(second.calls == 1, "the stale token removed the new observation")
        #expect(first.calls == 0)
    }

    @Test func tokensAreNeverReused() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        var seen = Set<ckvo_token_t>()
        for round in 0..<2_000 {
            let token = hub.mustObserve(probe, object: fake(0), key: key)
            #expect(seen.insert(token).inserted, "token \(token) reused in round \(round)")
            #expect(hub.unobserve(token) == CKVO_OK)
            if round % 100 == 0 { hub.flush() }
        }
        hub.flush()
        #expect(probe.releases == 2_000)
    }

    /// Records live in pages that are freed once every observation in them has ended; a page
    /// that later takes the same place starts its generations above the freed one's.
    @Test func tokensOfAFreedRecordPageNeverComeBack() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let count = 1_200  // more than two pages of records
        let old = (0..<count).map { hub.mustObserve(probe, object: fake($0), key: key) }
        for token in old { #expect(hub.unobserve(token) == CKVO_OK) }
        #expect(hub.flush() == CKVO_OK)  // releases run, records return, empty pages go

        let new = (0..<count).map { hub.mustObserve(probe, object: fake($0), key: key) }
        #expect(Set(old).isDisjoint(with: new), "a token came back")
        for token in old {
            #expect(hub.unobserve(token) == CKVO_ENOENT)
            #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_ENOENT)
        }
        #expect(hub.stats().observations == count)
        hub.did(fake(0), key)
        #expect(probe.calls == 1)
        for token in new { #expect(hub.unobserve(token) == CKVO_OK) }
        hub.flush()
        #expect(probe.releases == 2 * count)
    }

    @Test func unobserveAfterTheObjectWasUnobservedReportsNotFound() {
        let hub = TestHub()
        let key = hub.key("value")
        let token = hub.mustObserve(Probe(), object: fake(0), key: key)

        #expect(ckvo_unobserve_object(hub.raw, fake(0)) == CKVO_OK)
        #expect(hub.unobserve(token) == CKVO_ENOENT)
    }

    @Test func unobserveAfterTheOwnerWasUnobservedReportsNotFound() {
        let hub = TestHub()
        let key = hub.key("value")
        let token = hub.mustObserve(Probe(), object: fake(0), key: key, owner: fake(50))

        #expect(ckvo_unobserve_owner(hub.raw, fake(50)) == CKVO_OK)
        #expect(hub.unobserve(token) == CKVO_ENOENT)
    }

    @Test func tokenOfAnotherHubReportsNotFound() {
        let hub = TestHub()
        let empty = TestHub()
        let token = hub.mustObserve(Probe(), object: fake(0), key: hub.key("value"))

        #expect(empty.unobserve(token) == CKVO_ENOENT)
        #expect(hub.stats().observations == 1)
    }
}

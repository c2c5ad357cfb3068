// SPEC §2.21: a token names one observation of one hub. Given to another hub, or to a hub
// created after its own was destroyed, it is CKVO_ENOENT and removes nothing, whichever
// removal is used (plain, strict, deferred), however many hubs and observations there are.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct PerHubTokenTests {
    /// Registers one observation on each of `hubs` (same object, same key name) and returns the
    /// tokens and probes in hub order.
    private func observeOnEach(_ hubs: [TestHub]) -> (tokens: [ckvo_token_t], probes: [Probe]) {
        var tokens: [ckvo_token_t] = []
        var probes: [Probe] = []
        for hub in hubs {
            let probe = Probe()
            tokens.append(hub.mustObserve(probe, object: fake(0), key: hub.key("value")))
            probes.append(probe)
        }
        return (tokens, probes)
    }

    @Test func tokenOfAnotherHubReportsNotFoundAndRemovesNothing() {
        let hubs = (0..<8).map { _ in TestHub() }
        let (tokens, probes) = observeOnEach(hubs)

        #expect(Set(tokens).count == tokens.count, "two hubs handed out the same token")
        for (i, hub) in hubs.enumerated() {
            for (j, token) in tokens.enumerated() where j != i {
                #expect(hub.unobserve(token) == CKVO_ENOENT, "hub \(i) accepted hub \(j)'s token")
                #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_ENOENT)
                #expect(ckvo_unobserve_sync(hub.raw, token) == CKVO_ENOENT)
            }
        }
        for (i, hub) in hubs.enumerated() {
            hub.flush()
            #expect(hub.stats().observations == 1, "hub \(i) lost its observation")
            #expect(probes[i].releases == 0)
            hub.did(fake(0), hub.key("value"))
            #expect(probes[i].calls == 1)
        }
    }

    @Test func tokenIsLiveExactlyWhileUnobserveWouldRemoveIt() {
        let hubs = [TestHub(), TestHub()]
        let (tokens, _) = observeOnEach(hubs)
        let hub = hubs[0]
        #expect(ckvo_token_is_live(hub.raw, tokens[0]))
        #expect(!ckvo_token_is_live(hub.raw, tokens[1]), "another hub's token")
        #expect(!ckvo_token_is_live(hub.raw, .none))
        #expect(!ckvo_token_is_live(nil, tokens[0]))
        #expect(hub.unobserve(tokens[0]) == CKVO_OK)
        #expect(!ckvo_token_is_live(hub.raw, tokens[0]))
        // Removed with its object: no longer live either, and still not after its record is reused.
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(7), key: hub.key("value"))
        #expect(ckvo_token_is_live(hub.raw, token))
        #expect(ckvo_unobserve_object(hub.raw, fake(7)) == CKVO_OK)
        #expect(!ckvo_token_is_live(hub.raw, token))
        _ = hub.flush()
        let reused = hub.mustObserve(probe, object: fake(7), key: hub.key("value"))
        #expect(!ckvo_token_is_live(hub.raw, token))
        #expect(ckvo_token_is_live(hub.raw, reused))
        #expect(ckvo_token_is_live(hubs[1].raw, tokens[1]))
    }

    @Test func tokenOfADestroyedHubReportsNotFoundInANewHub() {
        // Many hubs come and go, each with observations that come and go; every old token is
        // tried on every later hub.
        var old: [ckvo_token_t] = []
        for round in 0..<32 {
            let hub = TestHub()
            let key = hub.key("value")
            let probe = Probe()
            var live: [ckvo_token_t] = []
            for i in 0..<16 { live.append(hub.mustObserve(probe, object: fake(i), key: key)) }
            for token in old {
                #expect(hub.unobserve(token) == CKVO_ENOENT, "round \(round): an old hub's token")
                #expect(ckvo_unobserve_deferred(hub.raw, token) == CKVO_ENOENT)
                #expect(ckvo_unobserve_sync(hub.raw, token) == CKVO_ENOENT)
            }
            #expect(hub.stats().observations == 16)
            #expect(probe.releases == 0, "round \(round): an old token released a new observation")
            // Half removed and recycled before the hub goes: their records come back with new tokens.
            for token in live[..<8] { #expect(hub.unobserve(token) == CKVO_OK) }
            hub.flush()
            for i in 0..<8 { live.append(hub.mustObserve(probe, object: fake(100 + i), key: key)) }
            #expect(Set(live).count == live.count)
            old.append(contentsOf: live)
            #expect(hub.destroy() == CKVO_OK)
            #expect(probe.releases == 24)
        }
        #expect(Set(old).count == old.count, "a token came back in another hub")
    }
}

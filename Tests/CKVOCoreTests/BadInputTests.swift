// SPEC §2.16: bad input never crashes the process; every function reports its documented
// status (or invalid value) and changes nothing.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct BadInputTests {
    @Test func nullHubIsRejectedEverywhere() {
        let probe = Probe()
        var token: ckvo_token_t = .none
        var stats = ckvo_hub_stats_t()

        #expect(
            ckvo_observe(nil, fake(0), 1, 0, nil, ckvots_probe_callback, probe.context, ckvots_probe_release, &token)
                == CKVO_EINVAL)
        #expect(token == .none)
        #expect(ckvo_unobserve(nil, ckvo_token_t(generation: 1, index: 0)) == CKVO_EINVAL)
        #expect(ckvo_unobserve_sync(nil, ckvo_token_t(generation: 1, index: 0)) == CKVO_EINVAL)
        #expect(ckvo_unobserve_deferred(nil, ckvo_token_t(generation: 1, index: 0)) == CKVO_EINVAL)
        #expect(ckvo_unobserve_object(nil, fake(0)) == CKVO_EINVAL)
        #expect(ckvo_unobserve_owner(nil, fake(0)) == CKVO_EINVAL)
        #expect(announce(ckvo_will_change, nil, fake(0), 1) == CKVO_EINVAL)
        #expect(announce(ckvo_did_change, nil, fake(0), 1) == CKVO_EINVAL)
        #expect(ckvo_hub_flush(nil) == CKVO_EINVAL)
        #expect(ckvo_hub_stats(nil, &stats) == CKVO_EINVAL)
        #expect(!ckvo_has_observers(nil, fake(0), 1))
        #expect(ckvo_key_intern(nil, "name", nil) == 0)
        #expect(ckvo_key_name(nil, 1) == nil)
        #expect(probe.calls == 0)
        #expect(probe.releases == 0)
    }

    @Test func destroyingNullIsANoOp() {
        #expect(ckvo_hub_destroy(nil) == CKVO_OK)
    }

    @Test func destroyingTheDefaultHubIsRefused() throws {
        let hub = try #require(ckvo_hub_default())
        #expect(ckvo_hub_destroy(hub) == CKVO_EINVAL)
        #expect(ckvo_key_intern(hub, "BadInputTests.stillAlive", nil) != 0)
    }

    @Test func nullArgumentsAreRejected() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        var token: ckvo_token_t = .none

        #expect(
            ckvo_observe(hub.raw, fake(0), key, 0, nil, nil, probe.context, ckvots_probe_release, &token)
                == CKVO_EINVAL, "NULL callback")
        #expect(ckvo_will_change(hub.raw, nil) == CKVO_EINVAL)
        #expect(ckvo_did_change(hub.raw, nil) == CKVO_EINVAL)
        #expect(ckvo_hub_stats(hub.raw, nil) == CKVO_EINVAL)
        #expect(ckvo_unobserve_object(hub.raw, nil) == CKVO_EINVAL)
        #expect(ckvo_unobserve_owner(hub.raw, nil) == CKVO_EINVAL)
        #expect(ckvo_key_intern(hub.raw, nil, nil) == 0)
        #expect(hub.stats().observations == 0)
        hub.destroy()
        #expect(probe.releases == 0)
    }

    @Test func nullTokenPointerAndNullReleaseAreAllowed() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()

        #expect(
            ckvo_observe(hub.raw, fake(0), key, 0, nil, ckvots_probe_callback, probe.context, nil, nil) == CKVO_OK)
        hub.did(fake(0), key)
        #expect(probe.calls == 1)
        #expect(ckvo_unobserve_object(hub.raw, fake(0)) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 0, "no release function was given")
    }

    @Test func invalidKeysAreRejected() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()

        for bad: ckvo_key_t in [0, key &+ 1, 0xFFFF, .max] {
            #expect(hub.observe(probe, object: fake(0), key: bad).status == CKVO_EINVAL, "key \(bad)")
            #expect(hub.will(fake(0), bad) == CKVO_EINVAL, "key \(bad)")
            #expect(hub.did(fake(0), bad) == CKVO_EINVAL, "key \(bad)")
            #expect(!hub.hasObservers(fake(0), bad), "key \(bad)")
        }
        hub.destroy()
        #expect(probe.releases == 0)
        #expect(probe.calls == 0)
    }

    @Test func unknownOptionBitsAreRejected() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()

        var bit: ckvo_options_t = 1
        while bit != 0 {
            if bit & ckvots_options_all == 0 {
                let (status, token) = hub.observe(
                    probe, object: fake(0), key: key, options: bit | CKVO_OPTION_INITIAL)
                #expect(status == CKVO_EINVAL, "option bit \(bit)")
                #expect(token == .none)
            }
            bit <<= 1
        }
        #expect(probe.calls == 0, "a failed observe delivered its initial notification")
        #expect(hub.stats().observations == 0)
        hub.destroy()
        #expect(probe.releases == 0)
    }

    @Test(arguments: [0, 5, 99, UInt32.max])
    func invalidKindIsRejected(raw: UInt32) {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        let kind = ckvo_kind_t(rawValue: raw)

        #expect(hub.will(fake(0), key, kind: kind) == CKVO_EINVAL)
        #expect(hub.did(fake(0), key, kind: kind) == CKVO_EINVAL)
        #expect(probe.calls == 0)
    }

    @Test func indexesWithSettingKindAreRejected() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        #expect(hub.will(fake(0), key, kind: CKVO_KIND_SETTING, indexes: [1]) == CKVO_EINVAL)
        #expect(hub.did(fake(0), key, kind: CKVO_KIND_SETTING, indexes: [1, 2]) == CKVO_EINVAL)
        #expect(probe.calls == 0)
    }

    @Test func nullIndexesWithNonzeroCountAreRejected() {
        let hub = TestHub()
        let key = hub.key("items")
        let probe = Probe()
        _ = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        for kind in [CKVO_KIND_INSERTION, CKVO_KIND_REMOVAL, CKVO_KIND_REPLACEMENT, CKVO_KIND_SETTING] {
            var change = ckvo_change_t()
            change.object = fake(0)
            change.key = key
            change.kind = kind
            change.indexes = nil
            change.index_count = 3
            #expect(ckvo_will_change(hub.raw, &change) == CKVO_EINVAL)
            #expect(ckvo_did_change(hub.raw, &change) == CKVO_EINVAL)
        }
        #expect(probe.calls == 0)
    }

    @Test func badKeyNamesYieldNoKey() {
        let hub = TestHub()

        #expect(ckvo_key_intern(hub.raw, "", nil) == 0, "empty name")
        #expect(ckvo_key_intern(hub.raw, String(repeating: "k", count: 1025), nil) == 0, "1025 bytes")
        #expect(ckvo_key_intern(hub.raw, String(repeating: "k", count: 100_000), nil) == 0, "100,000 bytes")
        #expect(ckvo_key_intern(hub.raw, String(repeating: "k", count: 1023), nil) != 0, "1023 bytes fit")
        #expect(hub.stats().keys == 1)
    }

    @Test func isPriorAndIsInitialFromTheAnnouncerAreIgnored() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        _ = hub.mustObserve(Probe(recorder, id: 1), object: fake(0), key: key)

        var change = ckvo_change_t()
        change.object = fake(0)
        change.key = key
        change.kind = CKVO_KIND_SETTING
        change.is_prior = true
        change.is_initial = true
        #expect(ckvo_did_change(hub.raw, &change) == CKVO_OK)

        #expect(recorder.events.count == 1)
        #expect(recorder.events.first?.isPrior == false)
        #expect(recorder.events.first?.isInitial == false)
    }
}

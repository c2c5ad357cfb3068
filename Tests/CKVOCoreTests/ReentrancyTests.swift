// SPEC §2.6, §2.3 (nesting limit), §2.7: callbacks may call back into the hub without deadlock;
// runaway nesting is refused with CKVO_ELOOP; nested will/did pairs notify once per pair.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct ReentrancyTests {
    @Test func callbackCanObserveUnobserveAndAnnounceWithoutDeadlock() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let other = hub.key("other")
        let otherProbe = Probe()
        let otherToken = hub.mustObserve(otherProbe, object: fake(0), key: other)
        let added = Probe()
        let results = Box<[String: ckvo_status_t]>([:])
        let flags = Box<[String: Bool]>([:])
        let outer = Probe()
        outer.onChange = { _ in
            var token: ckvo_token_t = .none
            results.value["observe"] = ckvo_observe(
                raw, fake(0), other, 0, nil, ckvots_probe_callback, added.context, ckvots_probe_release, &token)
            results.value["announce other key"] = announce(ckvo_did_change, raw, fake(0), other)
            results.value["unobserve"] = ckvo_unobserve(raw, otherToken)
            results.value["unobserve just added"] = ckvo_unobserve(raw, token)
            flags.value["has observers"] = ckvo_has_observers(raw, fake(0), key)
            flags.value["intern"] = ckvo_key_intern(raw, "interned.inside", nil) != 0
            var stats = ckvo_hub_stats_t()
            results.value["stats"] = ckvo_hub_stats(raw, &stats)
        }
        _ = hub.mustObserve(outer, object: fake(0), key: key)

        #expect(hub.did(fake(0), key) == CKVO_OK)

        #expect(
            results.value == [
                "observe": CKVO_OK, "announce other key": CKVO_OK, "unobserve": CKVO_OK,
                "unobserve just added": CKVO_OK, "stats": CKVO_OK,
            ])
        #expect(flags.value == ["has observers": true, "intern": true])
        #expect(otherProbe.calls == 1)
        #expect(added.calls == 1, "observation added inside a callback receives a nested announcement")
        #expect(hub.flush() == CKVO_OK)
        #expect(otherProbe.releases == 1)
        #expect(added.releases == 1)
    }

    @Test func callbackCanAnnounceTheSameKeyAgain() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let probe = Probe(recorder, id: 1)
        let depth = Box(0)
        probe.onChange = { _ in
            depth.value += 1
            if depth.value < 3 { _ = announce(ckvo_did_change, raw, fake(0), key, new: fake(depth.value)) }
        }
        _ = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_NEW)

        #expect(hub.did(fake(0), key, new: fake(0)) == CKVO_OK)

        #expect(probe.calls == 3)
        #expect(recorder.events.map(\.newValue) == [fake(0), fake(1), fake(2)])
    }

    @Test func runawayRecursionStopsAtTheNestingLimit() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let statuses = Box<[ckvo_status_t]>([])
        let probe = Probe()
        probe.onChange = { _ in statuses.value.append(announce(ckvo_did_change, raw, fake(0), key)) }
        _ = hub.mustObserve(probe, object: fake(0), key: key)

        let outer = hub.did(fake(0), key)

        #expect(outer == CKVO_OK)
        #expect(probe.calls == UInt64(CKVO_NESTING_LIMIT), "dispatches allowed up to the limit")
        #expect(statuses.value.filter { $0 == CKVO_ELOOP }.count == 1)
        // Statuses are appended as the nested calls return: the innermost, refused one first.
        #expect(statuses.value.first == CKVO_ELOOP, "the innermost dispatch was not refused")
        #expect(statuses.value.dropFirst().allSatisfy { $0 == CKVO_OK })

        // The process survived and the per-thread depth unwound: a plain dispatch works again.
        probe.onChange = nil
        #expect(hub.did(fake(0), key) == CKVO_OK)
        #expect(probe.calls == UInt64(CKVO_NESTING_LIMIT) + 1)
    }

    @Test func runawayWillChangeRecursionStopsAtTheNestingLimit() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let statuses = Box<[ckvo_status_t]>([])
        let probe = Probe()
        probe.onChange = { _ in statuses.value.append(announce(ckvo_will_change, raw, fake(0), key)) }
        _ = hub.mustObserve(probe, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        #expect(hub.will(fake(0), key) == CKVO_OK)

        #expect(probe.calls == UInt64(CKVO_NESTING_LIMIT))
        #expect(statuses.value.first == CKVO_ELOOP)
        probe.onChange = nil
        #expect(hub.will(fake(0), key) == CKVO_OK)
    }

    @Test func nestingLimitCountsAcrossHubs() {
        let first = TestHub()
        let second = TestHub()
        let hubs = [first.raw, second.raw]
        let keys = [first.key("value"), second.key("value")]
        let statuses = Box<[ckvo_status_t]>([])
        let calls = Box(0)
        let probes = [Probe(), Probe()]
        for (i, probe) in probes.enumerated() {
            probe.onChange = { _ in
                calls.value += 1
                let next = (i + 1) % 2  // alternate hubs on every level
                statuses.value.append(announce(ckvo_did_change, hubs[next], fake(0), keys[next]))
            }
        }
        _ = first.mustObserve(probes[0], object: fake(0), key: keys[0])
        _ = second.mustObserve(probes[1], object: fake(0), key: keys[1])

        #expect(first.did(fake(0), keys[0]) == CKVO_OK)

        #expect(calls.value == Int(CKVO_NESTING_LIMIT))
        #expect(statuses.value.first == CKVO_ELOOP)
        for probe in probes { probe.onChange = nil }
    }

    @Test func initialObserveAtTheNestingLimitFailsWithoutRelease() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let innermost = Probe()
        let plain = Probe()
        let initialStatus = Box<ckvo_status_t?>(nil)
        let plainStatus = Box<ckvo_status_t?>(nil)
        let depth = Box(0)
        let probe = Probe()
        probe.onChange = { _ in
            depth.value += 1
            if depth.value < Int(CKVO_NESTING_LIMIT) {
                _ = announce(ckvo_did_change, raw, fake(0), key)
                return
            }
            // CKVO_NESTING_LIMIT dispatches deep: an initial notification would go deeper.
            initialStatus.value = ckvo_observe(
                raw, fake(1), key, CKVO_OPTION_INITIAL, nil, ckvots_probe_callback, innermost.context,
                ckvots_probe_release, nil)
            plainStatus.value = ckvo_observe(
                raw, fake(1), key, 0, nil, ckvots_probe_callback, plain.context, ckvots_probe_release, nil)
        }
        _ = hub.mustObserve(probe, object: fake(0), key: key)

        hub.did(fake(0), key)

        #expect(initialStatus.value == CKVO_ELOOP)
        #expect(innermost.calls == 0)
        #expect(plainStatus.value == CKVO_OK, "only CKVO_OPTION_INITIAL is refused at the limit")
        hub.destroy()
        #expect(innermost.releases == 0, "release called for a failed observe")
        #expect(plain.releases == 1)
    }

    @Test func nestedWillDidPairsNotifyOncePerPair() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        let probe = Probe(recorder, id: 1)
        _ = hub.mustObserve(
            probe, object: fake(0), key: key, options: CKVO_OPTION_PRIOR | CKVO_OPTION_OLD | CKVO_OPTION_NEW)

        hub.will(fake(0), key, old: fake(1), new: fake(3))  // outer pair: 1 -> 3
        hub.will(fake(0), key, old: fake(1), new: fake(2))  // inner pair: 1 -> 2
        hub.did(fake(0), key, old: fake(1), new: fake(2))
        hub.did(fake(0), key, old: fake(2), new: fake(3))

        let events = recorder.events
        #expect(events.map(\.isPrior) == [true, true, false, false])
        #expect(events.map(\.oldValue) == [fake(1), fake(1), fake(1), fake(2)])
        #expect(events.map(\.newValue) == [nil, nil, fake(2), fake(3)])
    }

    @Test func nestedWillDidPairsFromInsideCallbacksNotifyOncePerPair() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let recorder = Recorder()
        let nester = Probe()
        let nested = Box(false)
        // Inside the outer prior notification, run a whole inner will/did pair on the same key.
        nester.onChange = { change in
            if change.pointee.is_prior && !nested.value {
                nested.value = true
                _ = announce(ckvo_will_change, raw, fake(0), key)
                _ = announce(ckvo_did_change, raw, fake(0), key)
            }
        }
        _ = hub.mustObserve(nester, object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        _ = hub.mustObserve(Probe(recorder, id: 2), object: fake(0), key: key, options: CKVO_OPTION_PRIOR)

        hub.will(fake(0), key)
        hub.did(fake(0), key)

        // inner prior, inner post (both nested in the nester's outer prior), outer prior, outer post.
        #expect(recorder.events.map(\.isPrior) == [true, false, true, false])
        #expect(nester.calls == 4)
    }
}

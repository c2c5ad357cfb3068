// SPEC §2.20: an object's current observations can be asked, not guessed, without blocking
// dispatch (ckvo_object_observations).

import CKVOCore
import CKVOTestSupport
import Testing

/// The live observations of `object` on `hub`, read with a buffer of `capacity` entries (nil:
/// one call to size the buffer, then a second with room for all); also returns the total count.
private func listing(
    _ hub: OpaquePointer, _ object: UnsafeRawPointer?, capacity: Int? = nil
) -> (infos: [ckvo_observation_info_t], count: Int) {
    var count = 0
    if capacity == nil {
        #expect(ckvo_object_observations(hub, object, nil, 0, &count) == CKVO_OK)
    }
    let room = capacity ?? count
    var buffer = [ckvo_observation_info_t](repeating: ckvo_observation_info_t(), count: room)
    let status = buffer.withUnsafeMutableBufferPointer {
        ckvo_object_observations(hub, object, $0.baseAddress, room, &count)
    }
    #expect(status == CKVO_OK)
    return (Array(buffer.prefix(min(room, count))), count)
}

private func address(_ callback: ckvo_callback_t?) -> UnsafeRawPointer? {
    unsafeBitCast(callback, to: UnsafeRawPointer?.self)
}

/// The callback every probe registers with.
private var probeCallback: UnsafeRawPointer? { address(ckvots_probe_callback) }

@Suite struct ObservationListingTests {
    @Test func objectWithNoObservationsListsNothing() {
        let hub = TestHub()
        #expect(listing(hub.raw, fake(1)).count == 0, "a hub with no keys")
        let key = hub.key("value")
        _ = hub.mustObserve(Probe(), object: fake(2), key: key)
        _ = hub.mustObserve(Probe(), object: nil, key: key)
        #expect(listing(hub.raw, fake(1)).count == 0, "another object and every object are observed")
    }

    @Test func listsEveryKeyInRegistrationOrderWithWhatWasRegistered() {
        let hub = TestHub()
        let a = hub.key("a"), b = hub.key("b"), unrelated = hub.key("unrelated")
        let probes = (0..<4).map { _ in Probe() }
        // Registered on b first: the listing goes by key, then by registration within the key.
        let u0 = hub.mustObserve(probes[0], object: fake(3), key: b, options: CKVO_OPTION_NEW, owner: fake(50))
        let u1 = hub.mustObserve(probes[1], object: fake(3), key: a, options: CKVO_OPTION_OLD | CKVO_OPTION_PRIOR)
        let u2 = hub.mustObserve(
            probes[2], object: fake(3), key: a,
            options: CKVO_OPTION_INITIAL | CKVO_OPTION_NEW | CKVO_OPTION_UNIQUE_CONTEXT, owner: fake(51))
        let u3 = hub.mustObserve(probes[3], object: fake(3), key: b)
        _ = hub.mustObserve(Probe(), object: fake(2), key: a)
        _ = hub.mustObserve(Probe(), object: nil, key: a)
        #expect(hub.unobserve(hub.mustObserve(Probe(), object: fake(3), key: unrelated)) == CKVO_OK)
        let listed = listing(hub.raw, fake(3))
        #expect(listed.count == 4)
        #expect(listed.infos.map(\.token) == [u1, u2, u0, u3])
        #expect(listed.infos.map(\.key) == [a, a, b, b])
        #expect(
            listed.infos.map(\.options) == [
                CKVO_OPTION_OLD | CKVO_OPTION_PRIOR,
                CKVO_OPTION_INITIAL | CKVO_OPTION_NEW | CKVO_OPTION_UNIQUE_CONTEXT,
                CKVO_OPTION_NEW, 0,
            ])
        #expect(listed.infos.map(\.owner) == [nil, fake(51), fake(50), nil])
        #expect(listed.infos.map(\.context) == [probes[1], probes[2], probes[0], probes[3]].map(\.context))
        #expect(listed.infos.allSatisfy { address($0.callback) == probeCallback })
    }

    @Test func removedObservationsVanishFromTheListing() {
        let hub = TestHub()
        let key = hub.key("value"), other = hub.key("other")
        let kept = Probe()
        let plain = hub.mustObserve(Probe(), object: fake(1), key: key)
        let keptToken = hub.mustObserve(kept, object: fake(1), key: key)
        let deferred = hub.mustObserve(Probe(), object: fake(1), key: other)
        let strict = hub.mustObserve(Probe(), object: fake(1), key: other, owner: fake(9))
        _ = hub.mustObserve(Probe(), object: fake(1), key: key, owner: fake(8))
        #expect(listing(hub.raw, fake(1)).count == 5)

        #expect(hub.unobserve(plain) == CKVO_OK)
        // Marked dead by a reader; no writer has unlinked it yet. Not live: not listed.
        #expect(ckvo_unobserve_deferred(hub.raw, deferred) == CKVO_OK)
        #expect(ckvo_unobserve_sync(hub.raw, strict) == CKVO_OK)
        #expect(ckvo_unobserve_owner(hub.raw, fake(8)) == CKVO_OK)
        let listed = listing(hub.raw, fake(1))
        #expect(listed.count == 1)
        #expect(listed.infos.map(\.token) == [keptToken])
        #expect(listed.infos.first?.context == kept.context)

        #expect(ckvo_unobserve_object(hub.raw, fake(1)) == CKVO_OK)
        #expect(listing(hub.raw, fake(1)).count == 0)
        hub.flush()
        #expect(listing(hub.raw, fake(1)).count == 0, "records reused after their release stay out")
    }

    @Test func capacitySmallerThanCountReportsTheTotalAndFillsThePrefix() {
        let hub = TestHub()
        let key = hub.key("value")
        let tokens = (0..<5).map { _ in hub.mustObserve(Probe(), object: fake(1), key: key) }

        var count = 99
        #expect(ckvo_object_observations(hub.raw, fake(1), nil, 0, &count) == CKVO_OK)
        #expect(count == 5, "no buffer: only the count")
        let partial = listing(hub.raw, fake(1), capacity: 2)
        #expect(partial.count == 5)
        #expect(partial.infos.map(\.token) == Array(tokens[..<2]))
        let whole = listing(hub.raw, fake(1), capacity: 8)
        #expect(whole.count == 5)
        #expect(whole.infos.map(\.token) == tokens)
    }

    @Test func nullObjectListsTheObservationsOfEveryObject() {
        let hub = TestHub()
        let a = hub.key("a"), b = hub.key("b")
        let w1 = hub.mustObserve(Probe(), object: nil, key: b)
        let w2 = hub.mustObserve(Probe(), object: nil, key: a, options: CKVO_OPTION_NEW)
        let specific = hub.mustObserve(Probe(), object: fake(1), key: a)

        let everyObject = listing(hub.raw, nil)
        #expect(everyObject.count == 2)
        #expect(everyObject.infos.map(\.token) == [w2, w1])
        #expect(everyObject.infos.map(\.key) == [a, b])
        let one = listing(hub.raw, fake(1))
        #expect(one.infos.map(\.token) == [specific], "an object's listing leaves out NULL-object observations")
    }

    @Test func badArgumentsAreInvalid() {
        let hub = TestHub()
        var count = 0
        var info = ckvo_observation_info_t()
        #expect(ckvo_object_observations(nil, fake(1), &info, 1, &count) == CKVO_EINVAL)
        #expect(ckvo_object_observations(hub.raw, fake(1), &info, 1, nil) == CKVO_EINVAL)
        #expect(ckvo_object_observations(hub.raw, fake(1), nil, 1, &count) == CKVO_EINVAL)
    }

    @Test func listingFromInsideACallbackSeesItsOwnObservation() {
        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(1), key: key)
        let seen = Box<[ckvo_token_t]>([])
        let raw = hub.raw
        probe.onChange = { _ in seen.value = listing(raw, fake(1)).infos.map(\.token) }
        hub.did(fake(1), key)
        #expect(seen.value == [token])
    }

    /// Workers observe and unobserve one object while a lister lists it: every listed token is
    /// one a worker registered for that object, on that key, with its context and owner (a
    /// removed record reuses the owner's place: a listing never reports what it holds then),
    /// and no listing counts more observations than can be live at once.
    @Test func listingWhileObservationsComeAndGoSeesOnlyRegisteredOnes() {
        let hub = TestHub()
        let key = hub.key("value"), elsewhere = hub.key("elsewhere")
        let workers = 3, held = 4, rounds = iterations(3_000, stress: 100_000)
        let steady = (0..<2).map { _ in Probe() }
        let steadyTokens = steady.map { hub.mustObserve($0, object: fake(1), key: key) }
        let probes = (0..<workers).map { _ in Probe() }
        for probe in probes { hub.observe(probe, object: fake(2), key: key) }  // retained by the hub
        let registered = (0..<workers).map { _ in Box<[ckvo_token_t]>([]) }
        let listed = Box<[ckvo_observation_info_t]>([])
        let worst = Box(0)
        let done = AtomicCounter()
        let bound = steady.count + workers * held
        let raw = hub.raw

        runThreads(workers + 1) { index in
            if index == workers {
                var buffer = [ckvo_observation_info_t](repeating: ckvo_observation_info_t(), count: bound + 4)
                repeat {
                    var count = 0
                    let status = buffer.withUnsafeMutableBufferPointer {
                        ckvo_object_observations(raw, fake(1), $0.baseAddress, $0.count, &count)
                    }
                    precondition(status == CKVO_OK)
                    worst.value = max(worst.value, count)
                    listed.value.append(contentsOf: buffer.prefix(min(count, buffer.count)))
                    yieldThread()
                } while done.value < UInt64(workers)
                return
            }
            let probe = probes[index]
            var live: [ckvo_token_t] = []
            for round in 0..<rounds {
                var token: ckvo_token_t = .none
                let object = round % 5 == 0 ? fake(3) : fake(1)  // some elsewhere, never listed
                let status = ckvo_observe(
                    raw, object, round % 7 == 0 ? elsewhere : key, CKVO_OPTION_UNIQUE_CONTEXT,
                    fake(60 + index), ckvots_probe_callback, probe.context, ckvots_probe_release, &token)
                precondition(status == CKVO_OK)
                if object == fake(1) { registered[index].value.append(token) }
                live.append(token)
                if live.count == held {
                    let victim = live.remove(at: round % held)
                    let removal = round % 3 == 0 ? ckvo_unobserve_deferred(raw, victim) : ckvo_unobserve(raw, victim)
                    precondition(removal == CKVO_OK)
                }
            }
            for token in live { precondition(ckvo_unobserve(raw, token) == CKVO_OK) }
            done.next()
        }

        let known = Set(registered.flatMap(\.value) + steadyTokens)
        var owners: [ckvo_token_t: UnsafeRawPointer] = [:]
        for index in 0..<workers {
            for token in registered[index].value { owners[token] = fake(60 + index) }
        }
        let contexts = Set((probes + steady).map(\.context))
        #expect(!listed.value.isEmpty)
        #expect(worst.value <= bound, "a listing counted more than can be live")
        #expect(worst.value >= steady.count)
        for info in listed.value {
            #expect(known.contains(info.token), "a listed token nobody registered for this object")
            #expect(info.key == key || info.key == elsewhere)
            #expect(contexts.contains(info.context!))
            #expect(address(info.callback) == probeCallback)
            #expect(info.owner == owners[info.token], "a listed owner is not the registered one")
        }
        let after = listing(hub.raw, fake(1))
        #expect(after.infos.map(\.token) == steadyTokens, "only the steady ones are left")
        hub.flush()
        #expect(hub.stats().pending_releases == 0)
    }

    /// Listing an object costs what the object has, not what the hub has: with 200,000 keys
    /// interned and every 1,000th observed on other objects, listing an object observed on two of
    /// them examines its two slots (counted by the listing, per thread), in key order. Before,
    /// it looked up every key of the hub.
    @Test func listingAnObjectExaminesOnlyItsOwnSlots() {
        let hub = TestHub()
        let count = 200_000
        var keys = [ckvo_key_t](repeating: 0, count: count)
        #expect(ckvots_keys_intern(hub.raw, "many", count, &keys) == count)
        for i in stride(from: 0, to: count, by: 1_000) {
            _ = hub.mustObserve(Probe(), object: fake(2 + i % 7), key: keys[i])
        }
        let last = hub.mustObserve(Probe(), object: fake(1), key: keys[count - 1])
        let first = hub.mustObserve(Probe(), object: fake(1), key: keys[0])
        let before = ckvots_listing_steps()
        let listed = listing(hub.raw, fake(1), capacity: 4)
        let steps = ckvots_listing_steps() - before
        print("listing: one object with 2 of \(count) keys examined \(steps) slots or keys")
        #expect(listed.infos.map(\.token) == [first, last], "by key, in interning order")
        #expect(steps == 2, "listing one object examined \(steps) slots or keys")
    }

    /// An object observed on more keys than one pass sorts (64) still lists by key in interning
    /// order, whatever order they were registered in, in ceil(keys / 64) passes over its slots.
    @Test func anObjectWithManyKeysListsThemInInterningOrder() {
        let hub = TestHub()
        let count = 200
        var keys = [ckvo_key_t](repeating: 0, count: count)
        #expect(ckvots_keys_intern(hub.raw, "k", count, &keys) == count)
        var tokens: [ckvo_key_t: ckvo_token_t] = [:]
        for i in 0..<count {
            let key = keys[(i * 37) % count]  // 37 is prime to 200: every key once, shuffled
            tokens[key] = hub.mustObserve(Probe(), object: fake(1), key: key)
        }
        // One of them goes and comes back: a newer slot for an old key.
        #expect(hub.unobserve(tokens[keys[5]]!) == CKVO_OK)
        tokens[keys[5]] = hub.mustObserve(Probe(), object: fake(1), key: keys[5])
        let before = ckvots_listing_steps()
        let listed = listing(hub.raw, fake(1), capacity: count)
        let steps = ckvots_listing_steps() - before
        #expect(listed.infos.map(\.key) == keys)
        #expect(listed.infos.map(\.token) == keys.map { tokens[$0]! })
        #expect(steps <= UInt64(count * ((count + 63) / 64)), "\(steps) slots examined")
    }
}

// SPEC §2.17: registration and removal stay bounded as one key's observer count grows — a
// million observers on one key — and a hub holds a million distinct keys, each observed,
// dispatched to and named correctly. Checked by counts only, never by time (a quadratic engine
// makes this suite time out instead).

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct ScaleTests {
    @Test func millionObserversOnOneKeyRegisterDispatchAndRemove() throws {
        let hub = TestHub()
        let key = hub.key("value")
        let count = 1_000_000
        let tally = try #require(ckvots_tally_create(count))
        defer { ckvots_tally_destroy(tally) }
        var tokens = [ckvo_token_t](repeating: .none, count: count)
        var firstError = CKVO_OK

        let registered = ckvots_tally_observe_all(tally, hub.raw, fake(0), key, count, &tokens, &firstError)

        #expect(registered == count, "first failure: \(firstError)")
        #expect(firstError == CKVO_OK)
        #expect(hub.stats().observations == count)
        #expect(Set(tokens).count == count, "tokens are unique")
        #expect(!tokens.contains(.none))

        #expect(hub.did(fake(0), key) == CKVO_OK)
        #expect(ckvots_tally_calls_equal(tally, 1) == count, "every observer called exactly once")

        // Remove in a scrambled order, so no engine gets its favourite (LIFO or FIFO) pattern.
        var order = Array(0..<count)
        var rng = SplitMix(seed: 42)
        order.shuffle(using: &rng)
        let removed = ckvots_unobserve_all(hub.raw, tokens, order, count)

        #expect(removed == count)
        #expect(hub.stats().observations == 0)
        #expect(hub.flush() == CKVO_OK)
        #expect(ckvots_tally_releases_equal(tally, 1) == count, "every context released exactly once")
        #expect(hub.stats().pending_releases == 0)
        #expect(hub.did(fake(0), key) == CKVO_OK)
        #expect(ckvots_tally_calls_equal(tally, 1) == count, "a removed observer was called")
    }

    @Test func millionKeysInternObserveDispatchAndRemove() throws {
        let hub = TestHub()
        let count = 1_000_000
        let half = count / 2
        var keys = [ckvo_key_t](repeating: 0, count: count)

        #expect(ckvots_keys_intern(hub.raw, "k", count, &keys) == count)
        #expect(hub.stats().keys == count)
        #expect(Set(keys).count == count, "distinct names got distinct keys")
        #expect(!keys.contains(0))
        #expect(ckvots_keys_names_match(hub.raw, "k", keys, count) == count, "ckvo_key_name round-trips")
        var again = [ckvo_key_t](repeating: 0, count: count)
        #expect(ckvots_keys_intern(hub.raw, "k", count, &again) == count)
        #expect(again == keys, "interning a name again returns its key")
        #expect(hub.stats().keys == count, "interning again added keys")
        #expect(ckvo_key_name(hub.raw, keys.max()! &+ 1) == nil)

        // The first half observed on one object, the second half on every object (wildcard).
        let tally = try #require(ckvots_tally_create(count))
        defer { ckvots_tally_destroy(tally) }
        var tokens = [ckvo_token_t](repeating: .none, count: count)
        var firstError = CKVO_OK
        let registered = keys.withUnsafeBufferPointer { keys in
            tokens.withUnsafeMutableBufferPointer { tokens in
                ckvots_tally_observe_keys(
                    tally, 0, hub.raw, fake(0), keys.baseAddress, half, tokens.baseAddress, &firstError)
                    + ckvots_tally_observe_keys(
                        tally, half, hub.raw, nil, keys.baseAddress! + half, count - half,
                        tokens.baseAddress! + half, &firstError)
            }
        }
        #expect(registered == count, "first failure: \(firstError)")
        #expect(hub.stats().observations == count)
        #expect(Set(tokens).count == count, "tokens are unique")
        #expect(ckvots_keys_with_observers(hub.raw, fake(0), keys, count) == count)

        #expect(ckvots_announce_keys(hub.raw, fake(0), keys, count) == count)
        #expect(ckvots_tally_calls_equal(tally, 1) == count, "every observer called exactly once")
        #expect(ckvots_announce_keys(hub.raw, fake(1), keys, count) == count)
        #expect(ckvots_tally_calls_equal(tally, 1) == half, "an object's observer called for another object")
        #expect(ckvots_tally_calls_equal(tally, 2) == count - half, "a wildcard observer missed a change")

        #expect(ckvots_unobserve_all(hub.raw, tokens, nil, count) == count)
        #expect(hub.stats().observations == 0)
        #expect(hub.flush() == CKVO_OK)
        #expect(ckvots_tally_releases_equal(tally, 1) == count, "every context released exactly once")
        #expect(hub.stats().pending_releases == 0)
        #expect(ckvots_announce_keys(hub.raw, fake(0), keys, count) == count)
        #expect(ckvots_tally_calls_equal(tally, 1) == half, "a removed observer was called")
        #expect(ckvots_keys_names_match(hub.raw, "k", keys, count) == count, "keys outlive their observers")
        #expect(hub.stats().keys == count)
        #expect(hub.destroy() == CKVO_OK)
        #expect(ckvots_tally_releases_equal(tally, 1) == count, "destroy released a context again")
    }

    @Test func manyObjectsWithOneObserverEach() throws {
        let hub = TestHub()
        let key = hub.key("value")
        let count = iterations(100_000, stress: 1_000_000)
        let tally = try #require(ckvots_tally_create(count))
        defer { ckvots_tally_destroy(tally) }
        var tokens: [ckvo_token_t] = []
        tokens.reserveCapacity(count)

        for i in 0..<count {
            var token: ckvo_token_t = .none
            let status = ckvo_observe(
                hub.raw, fake(i), key, 0, nil, ckvots_tally_callback, ckvots_tally_slot(tally, i),
                ckvots_tally_release, &token)
            if status != CKVO_OK { break }
            tokens.append(token)
        }
        #expect(tokens.count == count)
        for i in stride(from: 0, to: count, by: 1_000) { hub.did(fake(i), key) }
        #expect(ckvots_tally_calls_equal(tally, 1) == count / 1_000)

        for i in stride(from: 0, to: count, by: 2) { _ = ckvo_unobserve_object(hub.raw, fake(i)) }
        #expect(hub.stats().observations == count / 2)
        #expect(hub.destroy() == CKVO_OK)
        #expect(ckvots_tally_releases_equal(tally, 1) == count)
    }
}

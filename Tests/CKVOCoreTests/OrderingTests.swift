// SPEC §2.4: observers of one (object, key) are called in registration order, prior and
// post-change alike.

import CKVOCore
import CKVOTestSupport
import Synchronization
import Testing

/// Calls through `forwardingCallback`, which is a probe callback under another address.
private let forwardedCalls = Atomic<Int>(0)

private let forwardingCallback: ckvo_callback_t = { change, context in
    forwardedCalls.add(1, ordering: .relaxed)
    ckvots_probe_callback(change, context)
}

@Suite struct OrderingTests {
    @Test func didChangeNotifiesInRegistrationOrder() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        for id in 1...10 { _ = hub.mustObserve(Probe(recorder, id: UInt64(id)), object: fake(0), key: key) }

        hub.did(fake(0), key)

        #expect(recorder.order == Array(1...10))
    }

    @Test func willChangeNotifiesInRegistrationOrder() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        for id in 1...10 {
            _ = hub.mustObserve(
                Probe(recorder, id: UInt64(id)), object: fake(0), key: key, options: CKVO_OPTION_PRIOR)
        }

        hub.will(fake(0), key)
        #expect(recorder.order == Array(1...10))
        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == Array(1...10))
    }

    @Test func orderSurvivesRemovalAndReregistration() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        var tokens: [UInt64: ckvo_token_t] = [:]
        for id in 1...8 {
            tokens[UInt64(id)] = hub.mustObserve(Probe(recorder, id: UInt64(id)), object: fake(0), key: key)
        }

        #expect(hub.unobserve(tokens[3]!) == CKVO_OK)
        #expect(hub.unobserve(tokens[6]!) == CKVO_OK)
        _ = hub.mustObserve(Probe(recorder, id: 9), object: fake(0), key: key)
        _ = hub.mustObserve(Probe(recorder, id: 3), object: fake(0), key: key)  // 3 comes back last
        #expect(hub.unobserve(tokens[1]!) == CKVO_OK)
        hub.did(fake(0), key)

        #expect(recorder.order == [2, 4, 5, 7, 8, 9, 3])
    }

    @Test func largeFanOutKeepsRegistrationOrder() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        var tokens: [ckvo_token_t] = []
        for id in 0..<1000 {
            tokens.append(hub.mustObserve(Probe(recorder, id: UInt64(id)), object: fake(0), key: key))
        }
        // Remove every third to leave holes wherever the engine keeps them.
        for id in stride(from: 0, to: 1000, by: 3) { #expect(hub.unobserve(tokens[id]) == CKVO_OK) }

        hub.did(fake(0), key)

        #expect(recorder.order == (0..<1000).filter { $0 % 3 != 0 }.map(UInt64.init))
    }

    @Test func mixedOptionsShareOneOrder() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        let options: [ckvo_options_t] = [
            0, CKVO_OPTION_PRIOR, CKVO_OPTION_NEW, CKVO_OPTION_PRIOR | CKVO_OPTION_OLD, CKVO_OPTION_INITIAL,
        ]
        for (id, option) in options.enumerated() {
            _ = hub.mustObserve(Probe(recorder, id: UInt64(id)), object: fake(0), key: key, options: option)
        }
        recorder.clear()  // drop the initial notification

        hub.will(fake(0), key)
        hub.did(fake(0), key)

        #expect(recorder.order == [1, 3, 0, 1, 2, 3, 4])
    }

    /// Observers of one (object, key) usually share a callback, and the engine then keeps it once
    /// for the list; one with another callback changes how the list holds them, not their order,
    /// through growth, compaction and the merge with the key's observers of every object.
    @Test func observersWithDifferentCallbacksKeepOneRegistrationOrder() {
        let hub = TestHub()
        let key = hub.key("value")
        let recorder = Recorder()
        var tokens: [ckvo_token_t] = []
        let before = forwardedCalls.load(ordering: .relaxed)
        for id in 0..<36 {
            tokens.append(
                hub.mustObserve(
                    Probe(recorder, id: UInt64(id)), object: fake(0), key: key,
                    callback: id == 34 ? forwardingCallback : ckvots_probe_callback))
        }
        hub.did(fake(0), key)
        #expect(recorder.order == (0..<36).map(UInt64.init))
        #expect(forwardedCalls.load(ordering: .relaxed) - before == 1)

        // Enough removals to compact the list, then the one with the other callback.
        for id in 0..<20 { #expect(hub.unobserve(tokens[id]) == CKVO_OK) }
        #expect(hub.unobserve(tokens[34]) == CKVO_OK)
        _ = hub.mustObserve(Probe(recorder, id: 36), object: fake(0), key: key)
        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == (20..<34).map(UInt64.init) + [35, 36])
        #expect(forwardedCalls.load(ordering: .relaxed) - before == 1)

        _ = hub.mustObserve(Probe(recorder, id: 100), object: nil, key: key, callback: forwardingCallback)
        _ = hub.mustObserve(Probe(recorder, id: 37), object: fake(0), key: key)
        recorder.clear()
        hub.did(fake(0), key)
        #expect(recorder.order == (20..<34).map(UInt64.init) + [35, 36, 100, 37])
        #expect(forwardedCalls.load(ordering: .relaxed) - before == 2)
    }
}

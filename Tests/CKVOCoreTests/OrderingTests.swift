// SPEC §2.4: observers of one (object, key) are called in registration order, prior and
// post-change alike.

import CKVOCore
import CKVOTestSupport
import Testing

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
}

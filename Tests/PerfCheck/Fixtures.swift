// Fixtures.swift — what PerfCheck measures: one operation per fixture.

import CKVOCore
import CPerfCheck
import SwiftKVO

/// One measured operation and how to set it up.
struct Fixture {
    let name: String
    let summary: String
    let callbacksPerOperation: Int
    /// Sets up (registers observers) and returns the loop: `loop(n)` performs n operations.
    let setUp: () -> (Int) -> Void
}

extension Fixture {
    /// Every fixture, in report order.
    static var all: [Fixture] {
        [
            Fixture(name: "c-dispatch-1", summary: "ckvo_did_change reaching 1 observer", callbacksPerOperation: 1) {
                CWorld(observers: 1).setLoop
            },
            Fixture(name: "c-dispatch-100", summary: "ckvo_did_change reaching 100 observers", callbacksPerOperation: 100) {
                CWorld(observers: 100).setLoop
            },
            Fixture(name: "token-dispatch-1", summary: "@Observed set reaching 1 token observer", callbacksPerOperation: 1) {
                TokenWorld(observers: 1).setLoop
            },
            Fixture(name: "token-dispatch-100", summary: "@Observed set reaching 100 token observers", callbacksPerOperation: 100) {
                TokenWorld(observers: 100).setLoop
            },
            Fixture(name: "observed-set-no-observer", summary: "@Observed set, no object of the class observed", callbacksPerOperation: 0) {
                let subject = Quiet()
                return { n in for i in 0..<n { subject.value = i } }
            },
            Fixture(name: "observed-set-sparse", summary: "@Observed set of an unobserved object, another object of its class observed", callbacksPerOperation: 0) {
                let world = TokenWorld(observers: 1)
                let unobserved = Subject()
                return { n in
                    withExtendedLifetime(world) { for i in 0..<n { unobserved.value = i } }
                }
            },
            Fixture(name: "c-churn-100", summary: "ckvo_observe + ckvo_unobserve on a key with 100 observers", callbacksPerOperation: 0) {
                let world = CWorld(observers: 100)
                return { n in
                    for i in 0..<n { _ = ckvo_unobserve(world.hub, world.observe(context: -1 - i & 63)) }
                }
            },
            Fixture(name: "token-churn-100", summary: "observe(\\.value) + invalidate() on a key with 100 observers", callbacksPerOperation: 0) {
                let world = TokenWorld(observers: 100)
                return { n in
                    for _ in 0..<n { world.observe().invalidate() }
                }
            },
            Fixture(name: "hub-post-10", summary: "NotificationHub post reaching 10 observers", callbacksPerOperation: 10) {
                let sender = Sender()
                let observers = (0..<10).map { _ in Listener() }
                for observer in observers {
                    NotificationHub.default.addObserver(observer, name: perfCheckNote, object: sender) { _, _ in
                        perfcheck_tick()
                    }
                }
                return { n in
                    withExtendedLifetime(observers) {
                        for _ in 0..<n { NotificationHub.default.post(name: perfCheckNote, object: sender) }
                    }
                }
            },
        ]
    }
}

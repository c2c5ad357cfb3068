// Fixtures.swift — what PerfCheck measures: one operation per fixture.

import CKVOCore
import CPerfCheck
import SwiftKVO

/// One measured operation and how to set it up.
struct Fixture {
    let name: String
    /// What one operation is (the baseline file's last column).
    let summary: String
    let callbacksPerOperation: Int
    /// Sets up (registers observers) and returns the loop: `loop(n)` performs n operations.
    let setUp: () -> (Int) -> Void

    init(_ name: String, _ summary: String, callbacks: Int, setUp: @escaping () -> (Int) -> Void) {
        self.name = name
        self.summary = summary
        callbacksPerOperation = callbacks
        self.setUp = setUp
    }
}

extension Fixture {
    /// Every fixture, in report order.
    static var all: [Fixture] {
        [
            Fixture("c-dispatch-1", "ckvo_did_change reaching 1 observer", callbacks: 1) {
                CWorld(observers: 1).setLoop
            },
            Fixture("c-dispatch-100", "ckvo_did_change reaching 100 observers", callbacks: 100) {
                CWorld(observers: 100).setLoop
            },
            Fixture("token-dispatch-1", "@Observed set reaching 1 token observer", callbacks: 1) {
                TokenWorld(observers: 1).setLoop
            },
            Fixture("token-dispatch-100", "@Observed set reaching 100 token observers", callbacks: 100) {
                TokenWorld(observers: 100).setLoop
            },
            Fixture("by-name-dispatch-1", "@Observed set reaching 1 observer by name", callbacks: 1) {
                ByNameWorld(observers: 1).setLoop
            },
            Fixture("by-name-dispatch-100", "@Observed set reaching 100 observers by name", callbacks: 100) {
                ByNameWorld(observers: 100).setLoop
            },
            // The setters go round 64 objects, as a program sets many: on one
            // object the optimizer could hoist per-set work (an exclusivity
            // check) out of the loop, and the count would hide it.
            Fixture("observed-set-no-observer", "@Observed set, no object of the class observed", callbacks: 0) {
                roundRobinSetLoop((0..<64).map { _ in Quiet() })
            },
            Fixture("observed-get", "@Observed get", callbacks: 0) {
                roundRobinGetLoop((0..<64).map { _ in Quiet() })
            },
            Fixture(
                "observed-set-sparse", "@Observed set of an unobserved object, another object of its class observed",
                callbacks: 0
            ) {
                let world = TokenWorld(observers: 1)
                let setLoop = roundRobinSetLoop((0..<64).map { _ in Subject() })
                return { n in withExtendedLifetime(world) { setLoop(n) } }
            },
            // 64 contexts in turn: the engine hashes an observation's identity (context
            // included), so one context alone would measure one probe sequence.
            Fixture("c-churn-100", "ckvo_observe + ckvo_unobserve on a key with 100 observers", callbacks: 0) {
                let world = CWorld(observers: 100)
                return { n in
                    for i in 0..<n { _ = ckvo_unobserve(world.hub, world.observe(context: -1 - i & 63)) }
                }
            },
            Fixture("token-churn-100", "observe(\\.value) + invalidate() on a key with 100 observers", callbacks: 0) {
                let world = TokenWorld(observers: 100)
                return { n in
                    for _ in 0..<n { world.observe().invalidate() }
                }
            },
            Fixture(
                "by-name-churn-100", "observe(keyPath: \"value\") + invalidate() on a key with 100 observers",
                callbacks: 0
            ) {
                let world = ByNameWorld(observers: 100)
                return { n in
                    for _ in 0..<n { world.observe().invalidate() }
                }
            },
            Fixture("hub-post-10", "NotificationHub post reaching 10 observers", callbacks: 10) {
                let sender = Sender()
                let observers = (0..<10).map { _ in Listener() }
                for observer in observers {
                    try! NotificationHub.default.addObserver(observer, name: perfCheckNote, object: sender) { _, _ in
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

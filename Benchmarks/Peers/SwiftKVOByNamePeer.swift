// SwiftKVOByNamePeer.swift — SwiftKVO's key-value coding: the token peer's
// class and callbacks, observed by name (`observe(keyPath: "value")`, an
// `ObservedChange<Any>`) instead of by typed key path. Its rows against the
// token peer's are the cost of reaching a key by name: registration (churn)
// and dispatch (fan-out) should both be close to 1.

import CBenchFloor
import SwiftKVO

struct SwiftKVOByNamePeer: Peer {
    let id = "swiftkvo-by-name"
    let title = "SwiftKVO by name (observe(keyPath: \"value\") + token)"

    typealias Subject = SwiftKVOTokenPeer.Subject

    static func observe(_ subject: Subject, observer: BenchObserver) -> ObservationToken {
        // A fixture's key: registration cannot be refused.
        try! subject.observe(keyPath: "value", options: .new) { [observer] _, _ in
            observerDidChange(observer)
        }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject = Subject()
        var tokens: [ObservationToken] = []
        let observers: Int
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        init(observers: Int) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            tokens = (0..<observers).map { _ in SwiftKVOByNamePeer.observe(subject, observer: BenchObserver()) }
            subject.value = -1  // resolves the property's key (single-threaded)
            _ = cbench_take_count()
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() {
            for token in tokens { token.invalidate() }
            tokens.removeAll()
        }
    }

    /// One churn pair: observe the fan-out's subject by name, then invalidate the token.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            SwiftKVOByNamePeer.observe(subject, observer: observer).invalidate()
        }
    }

    func makeFanOut(observers: Int) -> (any Fixture)? { FanOut(observers: observers) }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        let subject = fanOut.subject
        return ChurnFixture(on: fanOut, pair: Churn(subject: subject), concurrentDispatcher: concurrentDispatcher) {
            subject.value = 1
        }
    }
}

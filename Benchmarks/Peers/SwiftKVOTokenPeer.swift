// SwiftKVOTokenPeer.swift — SwiftKVO's Swift API the way its docs show it
// first: a KeyValueObservable class (`let kvoRegistrar = KVORegistrar()`)
// with an `@Observed` property, observed with
// `observe(\.value, options: .new) { object, change in … }`, each observation
// owned by its ObservationToken and ended with `invalidate()`. A change is a
// plain assignment to the property. This peer is the default reference.
//
// Contention: `@Observed`'s docs say concurrent assignments to the same
// property need the user's own synchronization, because the stored value is a
// plain stored property. The contention fixture does what every other peer's
// does: both threads assign without a lock, so the Int store races exactly as
// the closure array's, NotificationCenter's and the KVOController port's
// `value` stores do (and the C API peer's), costing the cache line. The
// wrapper's only other mutable field (its cached key state) is written by the
// first assignment, which every fixture makes on one thread before measuring.

import CBenchFloor
import SwiftKVO

struct SwiftKVOTokenPeer: Peer {
    let id = "swiftkvo-token"
    let title = "SwiftKVO Swift API (@Observed + token)"

    /// The observed object, as a user declares it.
    final class Subject: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        @Observed var value = 0
    }

    static func observe(_ subject: Subject, observer: BenchObserver) -> ObservationToken {
        subject.observe(\.value, options: .new) { [observer] _, _ in
            observerDidChange(observer)
        }
    }

    final class FanOut: Fixture, @unchecked Sendable {
        let subject = Subject()
        var tokens: [ObservationToken] = []
        let observers: Int
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        init(observers: Int) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            for _ in 0..<observers {
                tokens.append(SwiftKVOTokenPeer.observe(subject, observer: BenchObserver()))
            }
            // The first assignment resolves the property's key (single-threaded).
            subject.value = -1
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

    final class ManySubjects: Fixture, @unchecked Sendable {
        let subjects: [Subject]
        var tokens: [ObservationToken] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            subjects = (0..<count).map { _ in Subject() }
            tokens.reserveCapacity(count)
            for subject in subjects {
                tokens.append(SwiftKVOTokenPeer.observe(subject, observer: BenchObserver()))
                subject.value = -1
            }
            _ = cbench_take_count()
        }
        func run(_ iterations: Int) {
            var index = cursor
            for i in 0..<iterations {
                subjects[index].value = i
                index += 1
                if index == subjects.count { index = 0 }
            }
            cursor = index
        }
        func tearDown() {
            for token in tokens { token.invalidate() }
            tokens.removeAll()
        }
    }

    final class Churn: Fixture, @unchecked Sendable {
        let fanOut: FanOut
        let observer = BenchObserver()
        let dispatcher: BackgroundLoop?
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        init(observers: Int, concurrentDispatcher: Bool) {
            fanOut = FanOut(observers: observers)
            let subject = fanOut.subject
            dispatcher = concurrentDispatcher ? BackgroundLoop { subject.value = 1 } : nil
        }
        func run(_ iterations: Int) {
            let subject = fanOut.subject
            for _ in 0..<iterations {
                let token = SwiftKVOTokenPeer.observe(subject, observer: observer)
                token.invalidate()
            }
        }
        func tearDown() {
            dispatcher?.stop()
            fanOut.tearDown()
        }
    }

    func makeFanOut(observers: Int) -> (any Fixture)? { FanOut(observers: observers) }
    func makeManySubjects(subjects: Int) -> (any Fixture)? { ManySubjects(subjects: subjects) }
    func makeNoObserverSetter() -> (any Fixture)? { FanOut(observers: 0) }
    func makeContention(observers: Int) -> (any Fixture)? { FanOut(observers: observers) }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        Churn(observers: observers, concurrentDispatcher: concurrentDispatcher)
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        // Observers, subjects and the token array exist before the measurement:
        // only what observing costs counts (the token is part of it).
        let observers = (0..<observations).map { _ in BenchObserver() }
        let subjects = (0..<(perObject ? observations : 1)).map { _ in Subject() }
        var tokens: [ObservationToken] = []
        tokens.reserveCapacity(observations)
        return measureHeap(observations: observations) {
            for i in 0..<observations {
                tokens.append(SwiftKVOTokenPeer.observe(subjects[perObject ? i : 0], observer: observers[i]))
            }
        } release: {
            for token in tokens { token.invalidate() }
            tokens.removeAll()
        }
    }
}

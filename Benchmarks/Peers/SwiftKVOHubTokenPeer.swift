// SwiftKVOHubTokenPeer.swift — SwiftKVO's named notifications in their token
// form, the shape of the NotificationCenter peer call for call:
// `NotificationHub.default.addObserver(forName:object:using:)` with a block
// that captures its observer, returning an `ObservationToken` that the
// fixture keeps and invalidates in tear-down (NotificationCenter's
// `addObserver(forName:object:queue:using:)` returns a token the same way).
// The observer is held by the block, as in the NotificationCenter peer, so no
// weak reference is loaded per delivery; `SwiftKVONotificationHubPeer` is the
// form with a weakly held observer.
//
// The sender is the hub peer's plain `Subject`: its setter posts
// `post(name:, object: self)`. Contention follows the other peers: both threads
// assign `value` without a lock; the hub itself is thread-safe.

import CBenchFloor
import SwiftKVO

struct SwiftKVOHubTokenPeer: FixtureFactories {
    let id = "swiftkvo-hub-token"
    let title = "SwiftKVO NotificationHub (token)"
    let fanOutIsThreadSafe = true

    typealias Subject = SwiftKVONotificationHubPeer.Subject

    static func observe(_ subject: Subject, observer: BenchObserver, readingSender: Bool = false) -> ObservationToken {
        let name = SwiftKVONotificationHubPeer.valueDidChange
        // Only an out-of-memory engine refuses a hub registration.
        if readingSender {
            return try! NotificationHub.default.addObserver(forName: name, object: subject) { [observer] note in
                observerDidChange(observer, sender: note.object)
            }
        }
        return try! NotificationHub.default.addObserver(forName: name, object: subject) { [observer] _ in
            observerDidChange(observer)
        }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject = Subject()
        var tokens: [ObservationToken] = []
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { !tokens.isEmpty }
        convenience init(observers count: Int) {
            self.init(observers: count, readingSender: false)
        }
        init(observers count: Int, readingSender: Bool) {
            unitsPerIteration = max(count, 1)
            tokens = (0..<count).map { _ in
                SwiftKVOHubTokenPeer.observe(subject, observer: BenchObserver(), readingSender: readingSender)
            }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() {
            for token in tokens { token.invalidate() }
        }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let subjects: [Subject]
        var tokens: [ObservationToken] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            subjects = (0..<count).map { _ in Subject() }
            tokens = subjects.map { SwiftKVOHubTokenPeer.observe($0, observer: BenchObserver()) }
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
        }
    }

    /// One churn pair: a token for the fan-out's subject, then `invalidate()`.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            SwiftKVOHubTokenPeer.observe(subject, observer: observer).invalidate()
        }
    }

    func makeContentionReadingSender(observers: Int) -> (any Fixture)? {
        FanOut(observers: observers, readingSender: true)
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        let subject = fanOut.subject
        return ChurnFixture(on: fanOut, pair: Churn(subject: subject), concurrentDispatcher: concurrentDispatcher) {
            subject.value = 1
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        measureObservations(observations, perObject: perObject, observer: BenchObserver.init, subject: Subject.init) {
            SwiftKVOHubTokenPeer.observe($0, observer: $1)
        } release: { tokens, _, _ in
            for token in tokens { token.invalidate() }
        }
    }
}

// SwiftKVONotificationHubPeer.swift — SwiftKVO's named notifications, shaped
// like the NotificationCenter peer: observers register a block for one sender
// with `NotificationHub.default.addObserver(observer, name:, object: subject)`,
// and the subject's setter posts `post(name:, object: self)`. Removal is
// `removeObserver(observer, name:, object:)`, the counterpart of that
// addObserver.
//
// The hub is process-wide (`NotificationHub.default`, no public initializer),
// so fixtures share it; each fixture's posts carry its own subject as sender
// and reach only that subject's observers, and every fixture removes its
// registrations in tearDown. The subject is a plain class, as a notification
// sender usually is (not KeyValueObservable): the hub then checks the sender
// through a weak reference on each delivery, a cost a user pays too.
//
// Contention follows the other peers: both threads assign `value` without a
// lock; the hub itself is thread-safe.

import CBenchFloor
import SwiftKVO

struct SwiftKVONotificationHubPeer: FixtureFactories {
    let id = "swiftkvo-hub"
    let title = "SwiftKVO NotificationHub"
    let fanOutIsThreadSafe = true

    static let valueDidChange = NotificationHub.Name("BenchValueDidChange")

    /// The sender. The stores to `value` race as two unsynchronized writers of one property do.
    final class Subject: @unchecked Sendable {
        var value = 0 {
            didSet { NotificationHub.default.post(name: SwiftKVONotificationHubPeer.valueDidChange, object: self) }
        }
    }

    static func observe(_ subject: Subject, observer: BenchObserver, readingSender: Bool = false) {
        // Only an out-of-memory engine refuses a hub registration.
        if readingSender {
            try! NotificationHub.default.addObserver(observer, name: valueDidChange, object: subject) { observer, note in
                observerDidChange(observer, sender: note.object)
            }
            return
        }
        try! NotificationHub.default.addObserver(observer, name: valueDidChange, object: subject) { observer, _ in
            observerDidChange(observer)
        }
    }

    static func unobserve(_ subject: Subject, observer: BenchObserver) {
        NotificationHub.default.removeObserver(observer, name: valueDidChange, object: subject)
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject = Subject()
        var observers: [BenchObserver] = []
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { !observers.isEmpty }
        convenience init(observers count: Int) {
            self.init(observers: count, readingSender: false)
        }
        init(observers count: Int, readingSender: Bool) {
            unitsPerIteration = max(count, 1)
            for _ in 0..<count {
                let observer = BenchObserver()
                SwiftKVONotificationHubPeer.observe(subject, observer: observer, readingSender: readingSender)
                observers.append(observer)
            }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() {
            for observer in observers { NotificationHub.default.removeObserver(observer) }
        }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let subjects: [Subject]
        var observers: [BenchObserver] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            subjects = (0..<count).map { _ in Subject() }
            for subject in subjects {
                let observer = BenchObserver()
                SwiftKVONotificationHubPeer.observe(subject, observer: observer)
                observers.append(observer)
            }
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
            for observer in observers { NotificationHub.default.removeObserver(observer) }
        }
    }

    /// One churn pair: register for the fan-out's subject, then remove that registration.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            SwiftKVONotificationHubPeer.observe(subject, observer: observer)
            SwiftKVONotificationHubPeer.unobserve(subject, observer: observer)
        }
        func tearDown() { NotificationHub.default.removeObserver(observer) }
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
            SwiftKVONotificationHubPeer.observe($0, observer: $1)
        } release: { _, observers, _ in
            for observer in observers { NotificationHub.default.removeObserver(observer) }
        }
    }
}

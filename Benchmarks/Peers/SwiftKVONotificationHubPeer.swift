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

struct SwiftKVONotificationHubPeer: Peer {
    let id = "swiftkvo-hub"
    let title = "SwiftKVO NotificationHub"

    static let valueDidChange = NotificationHub.Name("BenchValueDidChange")

    /// The sender. The stores to `value` race as two unsynchronized writers of one property do.
    final class Subject: @unchecked Sendable {
        var value = 0 {
            didSet { NotificationHub.default.post(name: SwiftKVONotificationHubPeer.valueDidChange, object: self) }
        }
    }

    static func observe(_ subject: Subject, observer: BenchObserver) {
        NotificationHub.default.addObserver(observer, name: valueDidChange, object: subject) { observer, _ in
            observerDidChange(observer)
        }
    }

    static func unobserve(_ subject: Subject, observer: BenchObserver) {
        NotificationHub.default.removeObserver(observer, name: valueDidChange, object: subject)
    }

    final class FanOut: Fixture, @unchecked Sendable {
        let subject = Subject()
        var observers: [BenchObserver] = []
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { !observers.isEmpty }
        init(observers count: Int) {
            unitsPerIteration = max(count, 1)
            for _ in 0..<count {
                let observer = BenchObserver()
                SwiftKVONotificationHubPeer.observe(subject, observer: observer)
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

    final class ManySubjects: Fixture, @unchecked Sendable {
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
                SwiftKVONotificationHubPeer.observe(subject, observer: observer)
                SwiftKVONotificationHubPeer.unobserve(subject, observer: observer)
            }
        }
        func tearDown() {
            dispatcher?.stop()
            NotificationHub.default.removeObserver(observer)
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
        let observers = (0..<observations).map { _ in BenchObserver() }
        let subjects = (0..<(perObject ? observations : 1)).map { _ in Subject() }
        return measureHeap(observations: observations) {
            for i in 0..<observations {
                SwiftKVONotificationHubPeer.observe(subjects[perObject ? i : 0], observer: observers[i])
            }
        } release: {
            for observer in observers { NotificationHub.default.removeObserver(observer) }
        }
    }
}

// NotificationCenterPeer.swift — Foundation's NotificationCenter (the
// swift-corelibs-foundation one on Linux): block observers added with
// addObserver(forName:object:queue:using:) for one sender, and a setter that
// posts a notification with the object as sender. A private center per
// fixture keeps fixtures from seeing each other's observers.

import CBenchFloor
import Foundation

struct NotificationCenterPeer: FixtureFactories {
    let id = "notificationcenter"
    let title = "Foundation NotificationCenter"
    let fanOutIsThreadSafe = true

    static let valueDidChange = Notification.Name("BenchValueDidChange")

    /// The observed object. The center is thread-safe; the stores to `value`
    /// race as two unsynchronized writers of one property do.
    final class Subject: @unchecked Sendable {
        let center: NotificationCenter
        var value = 0 {
            didSet { center.post(name: NotificationCenterPeer.valueDidChange, object: self) }
        }
        init(center: NotificationCenter) { self.center = center }
    }

    static func observe(
        _ subject: Subject, in center: NotificationCenter, observer: BenchObserver, readingSender: Bool = false
    ) -> NSObjectProtocol {
        if readingSender {
            return center.addObserver(forName: valueDidChange, object: subject, queue: nil) { [observer] note in
                observerDidChange(observer, sender: note.object)
            }
        }
        return center.addObserver(forName: valueDidChange, object: subject, queue: nil) { [observer] _ in
            observerDidChange(observer)
        }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let center = NotificationCenter()
        let subject: Subject
        var tokens: [NSObjectProtocol] = []
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        let observers: Int
        convenience init(observers: Int) {
            self.init(observers: observers, readingSender: false)
        }
        init(observers: Int, readingSender: Bool) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            subject = Subject(center: center)
            for _ in 0..<observers {
                tokens.append(
                    NotificationCenterPeer.observe(
                        subject, in: center, observer: BenchObserver(), readingSender: readingSender))
            }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() {
            for token in tokens { center.removeObserver(token) }
        }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let center = NotificationCenter()
        let subjects: [Subject]
        var tokens: [NSObjectProtocol] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            let center = self.center
            subjects = (0..<count).map { _ in Subject(center: center) }
            for subject in subjects {
                tokens.append(NotificationCenterPeer.observe(subject, in: center, observer: BenchObserver()))
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
            for token in tokens { center.removeObserver(token) }
        }
    }

    /// One churn pair: add a block observer for the fan-out's subject, then remove it.
    struct Churn: ChurnPair {
        let center: NotificationCenter
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            let token = NotificationCenterPeer.observe(subject, in: center, observer: observer)
            center.removeObserver(token)
        }
    }

    func makeContentionReadingSender(observers: Int) -> (any Fixture)? {
        FanOut(observers: observers, readingSender: true)
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        let subject = fanOut.subject
        return ChurnFixture(
            on: fanOut, pair: Churn(center: fanOut.center, subject: subject), concurrentDispatcher: concurrentDispatcher
        ) {
            subject.value = 1
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        let center = NotificationCenter()
        return measureObservations(
            observations, perObject: perObject, observer: BenchObserver.init, subject: { Subject(center: center) }
        ) {
            NotificationCenterPeer.observe($0, in: center, observer: $1)
        } release: { tokens, _, _ in
            for token in tokens { center.removeObserver(token) }
        }
    }
}

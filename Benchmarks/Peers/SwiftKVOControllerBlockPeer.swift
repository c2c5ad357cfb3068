// SwiftKVOControllerBlockPeer.swift — SwiftKVO's KVOController with a block,
// as its docs show it: an observer object owning
// `lazy var kvo = KVOController(observer: self)` (observer held weakly,
// observed objects retained, the default) calls
// `kvo.observe(subject, \.value, options: .new) { observer, subject, change in … }`
// and `kvo.unobserve(subject, \.value)`. The observed object is the same
// KeyValueObservable class with an `@Observed` property as the token peer's;
// a change is a plain assignment.
//
// The fixtures here are shared with the target-action peer
// (SwiftKVOControllerActionPeer.swift), which differs only in how an
// observer registers. Contention follows the other peers: both threads
// assign the property without a lock (see SwiftKVOTokenPeer.swift).

import CBenchFloor
import SwiftKVO

/// How an observer registers with its controller.
enum KVOControllerStyle: Sendable {
    /// `kvo.observe(subject, \.value, options: .new) { observer, _, _ in … }`
    case block
    /// `kvo.observe(subject, \.value, options: .new, action: Observer.valueDidChange)`
    case targetAction
}

/// The observed object of both KVOController peers, as a user declares it.
final class KVOControllerBenchSubject: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var value = 0
}

/// An observer owning its controller, as `lazy var kvo = KVOController(observer: self)` does.
/// Registration happens on the harness thread; callbacks only read `work`.
final class KVOControllerBenchObserver: @unchecked Sendable {
    let work = BenchObserver()
    private(set) lazy var kvo = KVOController(observer: self)

    func observe(_ subject: KVOControllerBenchSubject, style: KVOControllerStyle) {
        switch style {
        case .block:
            kvo.observe(subject, \.value, options: .new) { observer, _, _ in
                observerDidChange(observer.work)
            }
        case .targetAction:
            kvo.observe(subject, \.value, options: .new, action: KVOControllerBenchObserver.valueDidChange)
        }
    }

    func unobserve(_ subject: KVOControllerBenchSubject) {
        kvo.unobserve(subject, \.value)
    }

    /// The target-action peer's action.
    func valueDidChange(_ change: ObservedChange<Int>) {
        observerDidChange(work)
    }
}

/// Fixtures for both KVOController peers.
enum KVOControllerFixtures {
    typealias Subject = KVOControllerBenchSubject
    typealias Observer = KVOControllerBenchObserver

    final class FanOut: Fixture, @unchecked Sendable {
        let subject = Subject()
        var observers: [Observer] = []
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { !observers.isEmpty }
        init(observers count: Int, style: KVOControllerStyle) {
            unitsPerIteration = max(count, 1)
            for _ in 0..<count {
                let observer = Observer()
                observer.observe(subject, style: style)
                observers.append(observer)
            }
            // The first assignment resolves the property's key (single-threaded).
            subject.value = -1
            _ = cbench_take_count()
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() { for observer in observers { observer.kvo.unobserveAll() } }
    }

    final class ManySubjects: Fixture, @unchecked Sendable {
        let subjects: [Subject]
        var observers: [Observer] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int, style: KVOControllerStyle) {
            subjects = (0..<count).map { _ in Subject() }
            for subject in subjects {
                let observer = Observer()
                observer.observe(subject, style: style)
                observers.append(observer)
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
        func tearDown() { for observer in observers { observer.kvo.unobserveAll() } }
    }

    final class Churn: Fixture, @unchecked Sendable {
        let fanOut: FanOut
        let observer = Observer()
        let style: KVOControllerStyle
        let dispatcher: BackgroundLoop?
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        init(observers: Int, concurrentDispatcher: Bool, style: KVOControllerStyle) {
            self.style = style
            fanOut = FanOut(observers: observers, style: style)
            let subject = fanOut.subject
            dispatcher = concurrentDispatcher ? BackgroundLoop { subject.value = 1 } : nil
        }
        func run(_ iterations: Int) {
            let subject = fanOut.subject
            for _ in 0..<iterations {
                observer.observe(subject, style: style)
                observer.unobserve(subject)
            }
        }
        func tearDown() {
            dispatcher?.stop()
            observer.kvo.unobserveAll()
            fanOut.tearDown()
        }
    }

    static func measureMemory(observations: Int, perObject: Bool, style: KVOControllerStyle) -> MemorySample {
        // Observer objects and subjects exist before the measurement; each observer's
        // controller is created by its first observe, inside it (as in the port peer).
        let observers = (0..<observations).map { _ in Observer() }
        let subjects = (0..<(perObject ? observations : 1)).map { _ in Subject() }
        return measureHeap(observations: observations) {
            for i in 0..<observations { observers[i].observe(subjects[perObject ? i : 0], style: style) }
        } release: {
            for observer in observers { observer.kvo.unobserveAll() }
        }
    }
}

struct SwiftKVOControllerBlockPeer: Peer {
    let id = "swiftkvo-kvocontroller"
    let title = "SwiftKVO KVOController (block)"

    typealias F = KVOControllerFixtures

    func makeFanOut(observers: Int) -> (any Fixture)? { F.FanOut(observers: observers, style: .block) }
    func makeManySubjects(subjects: Int) -> (any Fixture)? { F.ManySubjects(subjects: subjects, style: .block) }
    func makeNoObserverSetter() -> (any Fixture)? { F.FanOut(observers: 0, style: .block) }
    func makeContention(observers: Int) -> (any Fixture)? { F.FanOut(observers: observers, style: .block) }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        F.Churn(observers: observers, concurrentDispatcher: concurrentDispatcher, style: .block)
    }
    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        F.measureMemory(observations: observations, perObject: perObject, style: .block)
    }
}

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
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \KVOControllerBenchSubject.value] }
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
            // A fixture's key path: registration cannot be refused.
            try! kvo.observe(subject, \.value, options: .new) { observer, _, _ in
                observerDidChange(observer.work)
            }
        case .targetAction:
            try! kvo.observe(subject, \.value, options: .new, action: KVOControllerBenchObserver.valueDidChange)
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

    /// One churn pair: the churn observer's controller observes the fan-out's subject, then
    /// unobserves it.
    struct Churn: ChurnPair {
        let subject: Subject
        let style: KVOControllerStyle
        let observer = Observer()
        func observeAndUnobserve() {
            observer.observe(subject, style: style)
            observer.unobserve(subject)
        }
        func tearDown() { observer.kvo.unobserveAll() }
    }
}

/// Both KVOController peers: the fixtures above, built with the peer's registration style.
protocol KVOControllerPeer: Peer {
    var style: KVOControllerStyle { get }
}

extension KVOControllerPeer {
    typealias F = KVOControllerFixtures

    func makeFanOut(observers: Int) -> (any Fixture)? { F.FanOut(observers: observers, style: style) }
    func makeManySubjects(subjects: Int) -> (any Fixture)? { F.ManySubjects(subjects: subjects, style: style) }
    func makeNoObserverSetter() -> (any Fixture)? { F.FanOut(observers: 0, style: style) }
    func makeContention(observers: Int) -> (any Fixture)? { F.FanOut(observers: observers, style: style) }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = F.FanOut(observers: observers, style: style)
        let subject = fanOut.subject
        return ChurnFixture(
            on: fanOut, pair: F.Churn(subject: subject, style: style), concurrentDispatcher: concurrentDispatcher
        ) {
            subject.value = 1
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        // Each observer's controller is created by its first observe, inside the
        // measurement (as in the port peer).
        measureObservations(
            observations, perObject: perObject, observer: F.Observer.init, subject: F.Subject.init
        ) { subject, observer in
            observer.observe(subject, style: style)
        } release: { _, observers, _ in
            for observer in observers { observer.kvo.unobserveAll() }
        }
    }
}

struct SwiftKVOControllerBlockPeer: KVOControllerPeer {
    let id = "swiftkvo-kvocontroller"
    let title = "SwiftKVO KVOController (block)"
    let style = KVOControllerStyle.block
}

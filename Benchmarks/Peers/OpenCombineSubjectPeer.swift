// OpenCombineSubjectPeer.swift — OpenCombine's PassthroughSubject: each
// observer is a `sink` kept alive by its AnyCancellable; a change is `send`.
// PassthroughSubject locks internally, so send, sink and cancel may run on
// several threads at once.

import CBenchFloor
import OpenCombine

struct OpenCombineSubjectPeer: Peer {
    let id = "opencombine-subject"
    let title = "OpenCombine PassthroughSubject"

    typealias Subject = PassthroughSubject<Int, Never>

    static func observe(_ subject: Subject, observer: BenchObserver) -> AnyCancellable {
        subject.sink { [observer] _ in observerDidChange(observer) }
    }

    final class FanOut: Fixture, @unchecked Sendable {
        let subject = Subject()
        var cancellables: [AnyCancellable] = []
        let observers: Int
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        init(observers: Int) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            for _ in 0..<observers {
                cancellables.append(OpenCombineSubjectPeer.observe(subject, observer: BenchObserver()))
            }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.send(i) }
        }
        func tearDown() { cancellables.removeAll() }
    }

    final class ManySubjects: Fixture, @unchecked Sendable {
        let subjects: [Subject]
        var cancellables: [AnyCancellable] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            subjects = (0..<count).map { _ in Subject() }
            for subject in subjects {
                cancellables.append(OpenCombineSubjectPeer.observe(subject, observer: BenchObserver()))
            }
        }
        func run(_ iterations: Int) {
            var index = cursor
            for i in 0..<iterations {
                subjects[index].send(i)
                index += 1
                if index == subjects.count { index = 0 }
            }
            cursor = index
        }
        func tearDown() { cancellables.removeAll() }
    }

    final class Churn: Fixture, @unchecked Sendable {
        let fanOut: FanOut
        let observer = BenchObserver()
        let dispatcher: BackgroundLoop?
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        init(observers: Int, concurrentDispatcher: Bool) {
            let fanOut = FanOut(observers: observers)
            self.fanOut = fanOut
            dispatcher = concurrentDispatcher ? BackgroundLoop { fanOut.subject.send(1) } : nil
        }
        func run(_ iterations: Int) {
            let subject = fanOut.subject
            for _ in 0..<iterations {
                let cancellable = OpenCombineSubjectPeer.observe(subject, observer: observer)
                cancellable.cancel()
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
        let observers = (0..<observations).map { _ in BenchObserver() }
        let subjects = (0..<(perObject ? observations : 1)).map { _ in Subject() }
        var cancellables: [AnyCancellable] = []
        cancellables.reserveCapacity(observations)
        let sample = measureHeap(observations: observations) {
            for i in 0..<observations {
                cancellables.append(
                    OpenCombineSubjectPeer.observe(subjects[perObject ? i : 0], observer: observers[i]))
            }
        } release: {}
        cancellables.removeAll()
        return sample
    }
}

// OpenCombineSubjectPeer.swift — OpenCombine's PassthroughSubject: each
// observer is a `sink` kept alive by its AnyCancellable; a change is `send`.
// PassthroughSubject locks internally, so send, sink and cancel may run on
// several threads at once.

import CBenchFloor
import OpenCombine

struct OpenCombineSubjectPeer: FixtureFactories {
    let id = "opencombine-subject"
    let title = "OpenCombine PassthroughSubject"
    let fanOutIsThreadSafe = true

    typealias Subject = PassthroughSubject<Int, Never>

    static func observe(_ subject: Subject, observer: BenchObserver) -> AnyCancellable {
        subject.sink { [observer] _ in observerDidChange(observer) }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
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

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
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

    /// One churn pair: sink on the fan-out's subject, then cancel.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            let cancellable = OpenCombineSubjectPeer.observe(subject, observer: observer)
            cancellable.cancel()
        }
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        return ChurnFixture(
            on: fanOut, pair: Churn(subject: fanOut.subject), concurrentDispatcher: concurrentDispatcher
        ) {
            fanOut.subject.send(1)  // through the fixture: a PassthroughSubject is not Sendable
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        measureObservations(observations, perObject: perObject, observer: BenchObserver.init, subject: Subject.init) {
            OpenCombineSubjectPeer.observe($0, observer: $1)
        } release: { _, _, _ in }  // freeing the cancellables afterwards cancels them
    }
}

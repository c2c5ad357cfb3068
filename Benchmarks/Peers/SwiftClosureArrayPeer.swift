// SwiftClosureArrayPeer.swift — the Swift floor: a class whose property's
// didSet calls every closure in an array. Each closure captures its observer
// object, as `{ [observer] in … }` code does, so a call pays what calling a
// real Swift callback pays (retaining and releasing the closure context).

import CBenchFloor

struct SwiftClosureArrayPeer: FixtureFactories {
    let id = "swift-closures"
    let title = "Swift array of closures (floor)"
    let fanOutIsThreadSafe = true

    /// Reading the array from several threads at once is safe; the stores to
    /// `value` race, but on an Int that only costs the cache line, which is
    /// what the contention workload is about.
    final class Subject: @unchecked Sendable {
        var observers: [(id: Int, callback: () -> Void)] = []
        var nextID = 0
        var value = 0 {
            didSet {
                for observer in observers { observer.callback() }
            }
        }

        @discardableResult
        func observe(_ callback: @escaping () -> Void) -> Int {
            nextID += 1
            observers.append((nextID, callback))
            return nextID
        }

        func unobserve(_ id: Int) {
            if let index = observers.firstIndex(where: { $0.id == id }) {
                observers.remove(at: index)
            }
        }
    }

    static func callback(for observer: BenchObserver) -> () -> Void {
        { [observer] in observerDidChange(observer) }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject = Subject()
        let unitsPerIteration: Int
        init(observers: Int) {
            unitsPerIteration = observers
            for _ in 0..<observers { subject.observe(SwiftClosureArrayPeer.callback(for: BenchObserver())) }
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let subjects: [Subject]
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            subjects = (0..<count).map { _ in
                let subject = Subject()
                subject.observe(SwiftClosureArrayPeer.callback(for: BenchObserver()))
                return subject
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
    }

    final class NoObservers: Fixture, @unchecked Sendable {
        let subject = Subject()
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        func run(_ iterations: Int) {
            for i in 0..<iterations { subject.value = i }
        }
    }

    /// One churn pair: append a callback to the fan-out's subject, then remove it by id.
    /// Single-threaded: an array has no synchronization, so no concurrent dispatcher.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            let id = subject.observe(SwiftClosureArrayPeer.callback(for: observer))
            subject.unobserve(id)
        }
    }

    func makeNoObserverSetter() -> (any Fixture)? { NoObservers() }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        if concurrentDispatcher { return nil }
        let fanOut = FanOut(observers: observers)
        return ChurnFixture(on: fanOut, pair: Churn(subject: fanOut.subject))
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        // The ids `observe` returns are kept in the reserved array; the subjects, freed
        // afterwards, take their callbacks with them.
        measureObservations(observations, perObject: perObject, observer: BenchObserver.init, subject: Subject.init) {
            subject, observer in subject.observe(SwiftClosureArrayPeer.callback(for: observer))
        } release: { _, _, _ in }
    }
}

// MARK: - Sparse observation

extension SwiftClosureArrayPeer.Subject: SparseSubject {}

extension SwiftClosureArrayPeer {
    /// An unobserved subject's didSet walks an empty array.
    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? {
        SparseFixture<Subject>(subjects: subjects, observed: observed) { subject in
            subject.observe(SwiftClosureArrayPeer.callback(for: BenchObserver()))
            return nil
        }
    }
}

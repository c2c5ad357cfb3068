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

struct SwiftKVOTokenPeer: FixtureFactories {
    let id = "swiftkvo-token"
    let title = "SwiftKVO Swift API (@Observed + token)"
    let fanOutIsThreadSafe = true

    /// The observed object, as a user declares it.
    final class Subject: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        @Observed var value = 0
        /// For the by-name peer (SwiftKVOByNamePeer.swift); the typed path never reads it.
        static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Subject.value] }
    }

    static func observe(_ subject: Subject, observer: BenchObserver) -> ObservationToken {
        // A fixture's key path: registration cannot be refused.
        try! subject.observe(\.value, options: .new) { [observer] _, _ in
            observerDidChange(observer)
        }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
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

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
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

    /// One churn pair: observe the fan-out's subject, then invalidate the token.
    struct Churn: ChurnPair {
        let subject: Subject
        let observer = BenchObserver()
        func observeAndUnobserve() {
            let token = SwiftKVOTokenPeer.observe(subject, observer: observer)
            token.invalidate()
        }
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        let fanOut = FanOut(observers: observers)
        let subject = fanOut.subject
        return ChurnFixture(on: fanOut, pair: Churn(subject: subject), concurrentDispatcher: concurrentDispatcher) {
            subject.value = 1
        }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        // Only what observing costs counts (the token is part of it).
        measureObservations(observations, perObject: perObject, observer: BenchObserver.init, subject: Subject.init) {
            SwiftKVOTokenPeer.observe($0, observer: $1)
        } release: { tokens, _, _ in
            for token in tokens { token.invalidate() }
        }
    }
}

// MARK: - Sparse observation and one object per thread

extension SwiftKVOTokenPeer.Subject: SparseSubject {}
extension SwiftKVOTokenPeer.UnobservedSubject: SparseSubject {}

extension SwiftKVOTokenPeer {
    /// `Subject` with another name. Observing is tracked per class and property, so the
    /// sparse workload's "none observed" side needs a class that nobody observes while the
    /// observed side's `Subject` objects exist. Its `value` sits at another offset: with
    /// `Subject`'s exact layout, LLVM merges the two setters into one outlined function, and
    /// every other workload's `Subject` setter becomes a call.
    final class UnobservedSubject: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        static var observableKeyPaths: [String: AnyKeyPath] { ["value": \UnobservedSubject.value] }
        let layoutTag = 0
        @Observed var value = 0
    }

    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? {
        guard observed else {
            return SparseFixture<UnobservedSubject>(subjects: subjects, observed: false) { _ in nil }
        }
        return SparseFixture<Subject>(subjects: subjects, observed: true) { subject in
            SwiftKVOTokenPeer.observe(subject, observer: BenchObserver())
        } release: { token in
            (token as! ObservationToken).invalidate()
        }
    }

    /// One subject per thread, each observed by the same observer objects. Each thread
    /// assigns only its own subject, so no store races.
    final class OwnObjectsFixture: ThreadIndexedFixture, @unchecked Sendable {
        let subjects: [Subject]
        var tokens: [ObservationToken] = []
        let unitsPerIteration: Int
        init(observers count: Int, threads: Int) {
            subjects = (0..<threads * OwnObjects.spacing).map { _ in Subject() }
            unitsPerIteration = count
            let observers = (0..<count).map { _ in BenchObserver() }
            for thread in 0..<threads {
                let subject = subjects[OwnObjects.index(ofThread: thread)]
                for observer in observers { tokens.append(SwiftKVOTokenPeer.observe(subject, observer: observer)) }
                // The first assignment resolves the property's key (single-threaded).
                subject.value = -1
            }
            _ = cbench_take_count()
        }
        func run(_ iterations: Int, thread: Int) {
            let subject = subjects[OwnObjects.index(ofThread: thread)]
            for i in 0..<iterations { subject.value = i }
        }
        func tearDown() {
            for token in tokens { token.invalidate() }
            tokens.removeAll()
        }
    }

    func makeContentionOwnObjects(observers: Int, threads: Int) -> (any ThreadIndexedFixture)? {
        OwnObjectsFixture(observers: observers, threads: threads)
    }
}

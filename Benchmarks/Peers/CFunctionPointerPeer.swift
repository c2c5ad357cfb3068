// CFunctionPointerPeer.swift — the C floor: an array of {function pointer,
// context} pairs called by a loop written in C (Benchmarks/CFloor/floor.c).
// No lookup, no locking, no reference counting: the cost of the call itself.

import CBenchFloor

struct CFunctionPointerPeer: FixtureFactories {
    let id = "c-floor"
    let title = "C function pointers, C loop (floor)"
    let fanOutIsThreadSafe = true

    /// Observers of one subject; `run` calls the C loop. Safe on several threads at
    /// once because nothing observes or unobserves meanwhile.
    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject: OpaquePointer
        let unitsPerIteration: Int
        init(observers: Int) {
            subject = cbench_subject_create()!
            unitsPerIteration = observers
            for i in 0..<observers {
                let status = cbench_subject_observe(
                    subject, cbench_tick_callback, UnsafeMutableRawPointer(bitPattern: i + 1), nil)
                precondition(status == 0)
            }
        }
        func run(_ iterations: Int) { cbench_subject_set_loop(subject, iterations) }
        func tearDown() { cbench_subject_destroy(subject) }
    }

    final class ManySubjects: CFloorSubjects, ManySubjectsFixture, @unchecked Sendable {
        init(subjects count: Int) {
            super.init(count: count) { subject in
                precondition(cbench_subject_observe(subject, cbench_tick_callback, nil, nil) == 0)
            }
        }
    }

    /// One churn pair: observe the fan-out's subject, then unobserve by id. Single-threaded:
    /// the floor has no synchronization, so no concurrent dispatcher.
    struct Churn: ChurnPair {
        let subject: OpaquePointer
        func observeAndUnobserve() {
            var id: UInt64 = 0
            cbench_subject_observe(subject, cbench_tick_callback, nil, &id)
            cbench_subject_unobserve(subject, id)
        }
    }

    func makeNoObserverSetter() -> (any Fixture)? { NoObservers() }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        if concurrentDispatcher { return nil }
        let fanOut = FanOut(observers: observers)
        return ChurnFixture(on: fanOut, pair: Churn(subject: fanOut.subject))
    }

    final class NoObservers: Fixture, @unchecked Sendable {
        let inner = FanOut(observers: 0)
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        func run(_ iterations: Int) { inner.run(iterations) }
        func tearDown() { inner.tearDown() }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        if perObject {
            var subjects: [OpaquePointer] = []
            subjects.reserveCapacity(observations)
            for _ in 0..<observations { subjects.append(cbench_subject_create()!) }
            let sample = measureHeap(observations: observations) {
                for subject in subjects {
                    cbench_subject_observe(subject, cbench_tick_callback, nil, nil)
                }
            } release: {}
            for subject in subjects { cbench_subject_destroy(subject) }
            return sample
        }
        let subject = cbench_subject_create()!
        defer { cbench_subject_destroy(subject) }
        return measureHeap(observations: observations) {
            for i in 0..<observations {
                cbench_subject_observe(
                    subject, cbench_tick_callback, UnsafeMutableRawPointer(bitPattern: i + 1), nil)
            }
        } release: {}
    }
}

/// `count` C floor subjects, each given its observer by `observe`, changed
/// round-robin by the C loop: the many-subjects fixture of the floors built on
/// floor.c.
class CFloorSubjects: @unchecked Sendable {
    let subjects: UnsafeMutablePointer<OpaquePointer?>
    let count: Int
    /// Whether tearDown destroys the subjects (false: someone else owns them).
    private let owned: Bool
    var cursor = 0
    let unitsPerIteration = 1

    init(count: Int, observe: (OpaquePointer) -> Void) {
        self.count = count
        owned = true
        subjects = .allocate(capacity: count)
        for i in 0..<count {
            let subject = cbench_subject_create()!
            observe(subject)
            subjects[i] = subject
        }
    }

    /// Round-robin over subjects that the caller keeps and destroys.
    init(borrowing borrowed: [OpaquePointer]) {
        count = borrowed.count
        owned = false
        subjects = .allocate(capacity: count)
        for (i, subject) in borrowed.enumerated() { subjects[i] = subject }
    }

    func run(_ iterations: Int) {
        cbench_subjects_round_robin(subjects, count, cursor, iterations)
        cursor = (cursor + iterations) % count
    }

    func tearDown() {
        if owned {
            for i in 0..<count { cbench_subject_destroy(subjects[i]) }
        }
        subjects.deallocate()
    }
}

// MARK: - Sparse observation and one object per thread

extension CFunctionPointerPeer {
    /// Subjects of the floor, one in a hundred observed (when `observed`); the C loop sets
    /// the unobserved ones round-robin.
    final class Sparse: Fixture, @unchecked Sendable {
        let all: [OpaquePointer]
        let unobserved: CFloorSubjects
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        init(subjects count: Int, observed: Bool) {
            let all = (0..<count).map { _ in cbench_subject_create()! }
            for (index, subject) in all.enumerated() where observed && SparseWorkload.isObserved(index) {
                precondition(cbench_subject_observe(subject, cbench_tick_callback, nil, nil) == 0)
            }
            self.all = all
            unobserved = CFloorSubjects(borrowing: SparseWorkload.unobservedIndexes(count).map { all[$0] })
        }
        func run(_ iterations: Int) { unobserved.run(iterations) }
        func tearDown() {
            unobserved.tearDown()
            for subject in all { cbench_subject_destroy(subject) }
        }
    }

    /// One subject per thread, each with the same observers (the same function and contexts).
    final class OwnObjectsFixture: ThreadIndexedFixture, @unchecked Sendable {
        let subjects: [OpaquePointer]
        let unitsPerIteration: Int
        init(observers: Int, threads: Int) {
            subjects = (0..<threads * OwnObjects.spacing).map { _ in cbench_subject_create()! }
            unitsPerIteration = observers
            for thread in 0..<threads {
                for i in 0..<observers {
                    let status = cbench_subject_observe(
                        subjects[OwnObjects.index(ofThread: thread)], cbench_tick_callback,
                        UnsafeMutableRawPointer(bitPattern: i + 1), nil)
                    precondition(status == 0)
                }
            }
        }
        func run(_ iterations: Int, thread: Int) {
            cbench_subject_set_loop(subjects[OwnObjects.index(ofThread: thread)], iterations)
        }
        func tearDown() {
            for subject in subjects { cbench_subject_destroy(subject) }
        }
    }

    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? {
        Sparse(subjects: subjects, observed: observed)
    }

    func makeContentionOwnObjects(observers: Int, threads: Int) -> (any ThreadIndexedFixture)? {
        OwnObjectsFixture(observers: observers, threads: threads)
    }
}

// SparseFixture.swift — the sparse-observation workload: many objects of one
// class, one in a hundred observed, and a loop that sets the unobserved ones.
// What it measures is what observing a few objects costs the class's other
// objects. The same fixture with nothing observed is the ratio's denominator:
// the same objects, the same loop, no observation anywhere.

import CBenchFloor

/// The workload's shape.
enum SparseWorkload {
    /// One object in this many is observed (indexes 0, 100, 200, …).
    static let observedEvery = 100

    static func isObserved(_ index: Int) -> Bool { index % observedEvery == 0 }

    /// Indexes of the objects that stay unobserved, out of `count`.
    static func unobservedIndexes(_ count: Int) -> [Int] {
        (0..<count).filter { !isObserved($0) }
    }
}

/// An object of a class whose instances the sparse-observation workload sets.
protocol SparseSubject: AnyObject {
    init()
    var value: Int { get set }
}

/// `subjects` objects of one class, one in `SparseWorkload.observedEvery` observed when
/// `observed` is true; an iteration sets the next unobserved object, round-robin.
final class SparseFixture<Subject: SparseSubject>: Fixture, @unchecked Sendable {
    let subjects: [Subject]
    let unobserved: [Subject]
    private var observations: [AnyObject] = []
    private let release: (AnyObject) -> Void
    private var cursor = 0
    let unitsPerIteration = 1
    var unitsAreCallbacks: Bool { false }

    /// `observe` registers one observation and returns what keeps it alive (nil if
    /// nothing needs keeping); `release` ends it in `tearDown`.
    init(
        subjects count: Int, observed: Bool, observe: (Subject) -> AnyObject?,
        release: @escaping (AnyObject) -> Void = { _ in }
    ) {
        let subjects = (0..<count).map { _ in Subject() }
        self.subjects = subjects
        unobserved = SparseWorkload.unobservedIndexes(count).map { subjects[$0] }
        self.release = release
        if observed {
            for (index, subject) in subjects.enumerated() where SparseWorkload.isObserved(index) {
                if let observation = observe(subject) { observations.append(observation) }
            }
        }
        // The first set of each object resolves whatever its class resolves lazily.
        for subject in subjects { subject.value = -1 }
        _ = cbench_take_count()
    }

    func run(_ iterations: Int) {
        var index = cursor
        let count = unobserved.count
        for i in 0..<iterations {
            unobserved[index].value = i
            index += 1
            if index == count { index = 0 }
        }
        cursor = index
    }

    func tearDown() {
        for observation in observations { release(observation) }
        observations.removeAll()
    }
}

// Peer.swift — what a peer is, and what it can be asked to build.
//
// A peer is one way a user would observe a value: a library or a design,
// driven through its public API the way its users drive it. For each workload
// it builds a fixture (the observers registered, the subject ready) or
// returns nil when it cannot express that workload; the table then shows "—".
//
// Adding a peer is one file: a type conforming to `Peer`, listed once in
// `PeerRegistry.all` (PeerRegistry.swift).

import CBenchFloor

/// A benchmarked way of observing changes.
protocol Peer: Sendable {
    /// Short, stable id used by `--filter`, `--reference`, and the JSON file.
    var id: String { get }
    /// Human-readable name for tables and the chart.
    var title: String { get }

    /// `observers` observers of one key of one object; an iteration is one change.
    func makeFanOut(observers: Int) -> (any Fixture)?
    /// `subjects` objects with one observer each; an iteration changes the next object, round-robin.
    func makeManySubjects(subjects: Int) -> (any Fixture)?
    /// A settable value nobody observes; an iteration is one set.
    func makeNoObserverSetter() -> (any Fixture)?
    /// `observers` observers of one key; `run` is called from several threads at once.
    func makeContention(observers: Int) -> (any Fixture)?
    /// One object per thread (`threads` of them), each observed by the same `observers`
    /// observers; `run(_:thread:)` is called from several threads at once (OwnObjects.swift).
    func makeContentionOwnObjects(observers: Int, threads: Int) -> (any ThreadIndexedFixture)?
    /// Named notifications only: `makeContention`'s fixture whose callbacks also read the
    /// notification's sender, as most real observers do.
    func makeContentionReadingSender(observers: Int) -> (any Fixture)?
    /// `subjects` objects of one class, one in a hundred observed (none when `observed` is
    /// false); an iteration sets the next unobserved object, round-robin (SparseFixture.swift).
    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)?
    /// A key with `observers` observers; an iteration is one observe + unobserve pair.
    /// With `concurrentDispatcher`, another thread changes the key non-stop meanwhile.
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)?
    /// Registers `observations` observations, all of one key of one object (`perObject` false)
    /// or one on each of `observations` objects (`perObject` true), and reports heap bytes.
    func measureMemory(observations: Int, perObject: Bool) -> MemorySample?
}

extension Peer {
    func makeFanOut(observers: Int) -> (any Fixture)? { nil }
    func makeManySubjects(subjects: Int) -> (any Fixture)? { nil }
    func makeNoObserverSetter() -> (any Fixture)? { nil }
    func makeContention(observers: Int) -> (any Fixture)? { nil }
    func makeContentionOwnObjects(observers: Int, threads: Int) -> (any ThreadIndexedFixture)? { nil }
    func makeContentionReadingSender(observers: Int) -> (any Fixture)? { nil }
    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? { nil }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? { nil }
    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? { nil }
}

/// A prepared workload. Fixtures are used from the harness thread, and for
/// contention from several threads at once; each peer file documents what it
/// guarantees, hence `@unchecked Sendable` on the conforming classes.
protocol Fixture: AnyObject, Sendable {
    /// Work units per iteration: delivered callbacks, sets, or observe/unobserve pairs.
    var unitsPerIteration: Int { get }
    /// Whether every unit delivers exactly one callback (so the harness can check
    /// the callback count against the units it asked for).
    var unitsAreCallbacks: Bool { get }
    /// Performs `iterations` iterations (a round-robin fixture continues where it stopped).
    func run(_ iterations: Int)
    /// Unregisters everything and stops helper threads. Called once, after measuring.
    func tearDown()
}

extension Fixture {
    var unitsAreCallbacks: Bool { true }
    func tearDown() {}
}

/// What a memory measurement found.
struct MemorySample: Sendable {
    /// Heap bytes in use after registering, minus before, divided by the observation count.
    var bytesPerObservation: Double
    /// Observations measured.
    var observations: Int
}

/// Measures the heap growth of `register`, which must keep what it registers
/// alive until `release` is called (outside the measurement).
func measureHeap(observations: Int, register: () -> Void, release: () -> Void) -> MemorySample {
    let before = cbench_heap_in_use()
    register()
    let after = cbench_heap_in_use()
    release()
    let delta = Double(Int(after) - Int(before))
    return MemorySample(bytesPerObservation: delta / Double(observations), observations: observations)
}

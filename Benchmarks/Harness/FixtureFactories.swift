// FixtureFactories.swift — the `make…` methods of a peer whose fixtures have
// the usual shape: a `FanOut` class (N observers of one key; with 0 observers
// it is also the setter nobody observes, and, when its library allows, the
// contention fixture) and a `ManySubjects` class.
//
// A peer conforming to `FixtureFactories` names those two nested classes
// `FanOut` and `ManySubjects`; Swift picks them up as the associated types. It
// still writes `makeChurn` and `measureMemory` itself, and may replace any of
// the methods below with its own (the floors have their own no-observer setter).

/// A fixture of `observers` observers of one key of one object; an iteration is one change.
protocol FanOutFixture: Fixture {
    init(observers: Int)
}

/// A fixture of `subjects` objects with one observer each, changed round-robin.
protocol ManySubjectsFixture: Fixture {
    init(subjects: Int)
}

/// A peer whose fan-out, many-subjects, no-observer and contention fixtures are
/// its nested `FanOut` and `ManySubjects` classes.
protocol FixtureFactories: Peer {
    associatedtype FanOut: FanOutFixture
    associatedtype ManySubjects: ManySubjectsFixture
    /// Whether `FanOut.run` may be called from several threads at once, that is,
    /// whether the peer takes part in the contention workload.
    var fanOutIsThreadSafe: Bool { get }
}

extension FixtureFactories {
    func makeFanOut(observers: Int) -> (any Fixture)? { FanOut(observers: observers) }
    func makeManySubjects(subjects: Int) -> (any Fixture)? { ManySubjects(subjects: subjects) }
    func makeNoObserverSetter() -> (any Fixture)? { FanOut(observers: 0) }
    func makeContention(observers: Int) -> (any Fixture)? {
        fanOutIsThreadSafe ? FanOut(observers: observers) : nil
    }
}

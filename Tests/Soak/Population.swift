// Population.swift — things that must all be gone at the end of a round.
//
// Subjects (observed objects) and observers die on whatever thread drops the
// last reference; Swift delivery records are checked when their observation
// ended and its handler was released. At the end of a round every one must
// have left: a subject or observer still alive was leaked (e.g. retained by a
// removed observation), a record never checked means a handler never released.

import Synchronization

final class Population: Sendable {
    private let entries = Atomic<Int>(0)
    private let exits = Atomic<Int>(0)

    func enter() { entries.add(1, ordering: .relaxed) }
    func leave() { exits.add(1, ordering: .relaxed) }

    var entered: Int { entries.load(ordering: .relaxed) }
    var left: Int { exits.load(ordering: .relaxed) }
}

/// Observed objects (`Subject`): enter when created, leave when they die.
let subjectPopulation = Population()
/// Observer objects (`SoakObserver`): enter when created, leave when they die.
let observerPopulation = Population()
/// Swift delivery records: enter when created, leave when checked.
let recordPopulation = Population()

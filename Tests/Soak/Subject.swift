// Subject.swift — the observed objects of the Swift-layer workloads.
//
// A subject has an `@Observed` value, an `@ObservedArray` of items and posts
// named notifications as their sender. Each of the three is a numbered
// sequence of changes (ChangeSequence): only the thread that holds the subject
// (SubjectPool) changes it, change k is marked started before it is announced
// and finished after, and its values carry k. The sequences live in a ledger
// that outlives the subject, so a delivery can be checked after the subject
// died and a delivery for another subject at the same address is recognised.

import SwiftKVO
import Synchronization

/// Changes 1, 2, 3, ... of one property or one sender's posts, one at a time.
final class ChangeSequence: Sendable {
    private let startedNumber = Atomic<UInt64>(0)
    private let finishedNumber = Atomic<UInt64>(0)

    /// The last change begun (0: none).
    var started: UInt64 { startedNumber.load(ordering: .sequentiallyConsistent) }
    /// The last change whose announcement returned.
    var finished: UInt64 { finishedNumber.load(ordering: .sequentiallyConsistent) }

    /// Begins the next change; only the thread holding the subject calls it.
    func begin() -> UInt64 {
        let number = started + 1
        startedNumber.store(number, ordering: .sequentiallyConsistent)
        return number
    }

    /// Marks change `number` finished.
    func end(_ number: UInt64) {
        finishedNumber.store(number, ordering: .sequentiallyConsistent)
    }
}

/// A subject's value: the number of the change that stored it.
struct Stamp: Sendable, Equatable {
    var number: UInt64
}

/// A subject's change sequences.
final class SubjectLedger: Sendable {
    let value = ChangeSequence()
    let items = ChangeSequence()
    let posts = ChangeSequence()
}

final class Subject: KeyValueObservable, @unchecked Sendable {  // changed only by the thread holding it
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Subject.value, "items": \Subject.items] }
    let ledger = SubjectLedger()
    @Observed var value = Stamp(number: 0)
    @ObservedArray var items: [UInt64] = []

    init() { subjectPopulation.enter() }
    deinit { subjectPopulation.leave() }
}

// SoakObserver.swift — an observer object that dies on whatever thread drops it.
//
// Used as KVOController's observer and as a NotificationHub observer, both of
// which hold it weakly. The graveyard tells it before dropping it (what its
// observations received so far must be complete); its deinit first marks it
// dead (a block called with it afterwards is a callback into a dead observer:
// Receiver.checkAlive), then ends the observations it still has: from that
// moment nothing may reach their handlers.

import SwiftKVO
import Synchronization

final class SoakObserver: @unchecked Sendable {  // `controller` is set once, before the observer is shared
    private let alive = Atomic<Bool>(true)
    private let records = Locked<[DeliveryRecord]>([])

    /// Its KVOController, when it observes subjects (the controller dies with it).
    var controller: KVOController<SoakObserver>?

    init() { observerPopulation.enter() }

    deinit {
        alive.store(false, ordering: .sequentiallyConsistent)
        for record in records.withLock({ $0 }) { record.endWithObserver() }
        observerPopulation.leave()
    }

    var isAlive: Bool { alive.load(ordering: .sequentiallyConsistent) }

    /// Notes an observation made on its behalf, to end when it dies.
    func track(_ record: DeliveryRecord) {
        records.withLock { $0.append(record) }
    }

    /// Its last reference may be about to go (Graveyard).
    func dropping() {
        for record in records.withLock({ $0 }) { record.observerDropping() }
    }
}

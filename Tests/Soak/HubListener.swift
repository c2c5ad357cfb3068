// HubListener.swift — a thread registering weakly held NotificationHub observers.
//
// Keeps up to six SoakObservers registered for the shared name: from one pool
// subject (range accounting of its posts) or from every sender (count
// accounting). Retires one by removing all its registrations, by removing one
// (name and sender), or not at all — and hands it to the graveyard, where it
// dies while still registered: posts that meet it must skip it and remove it.

#if canImport(Glibc)
import Glibc
#endif
import SwiftKVO

final class HubListener {
    private struct Registration {
        weak var subject: Subject?
        let record: DeliveryRecord
    }

    private struct Live {
        let observer: SoakObserver
        var registrations: [Registration]
    }

    private let pool: SubjectPool
    private let graveyard: Graveyard
    private var random: SoakRandom
    private var live: [Live] = []
    private(set) var tally = LocalTally()

    init(pool: SubjectPool, graveyard: Graveyard, random: SoakRandom) {
        self.pool = pool
        self.graveyard = graveyard
        self.random = random
    }

    func run(_ round: RoundClock) {
        while round.running {
            if live.count < 6 && (live.isEmpty || random.percent(60)) {
                live.append(makeListener())
            } else {
                retire(live.remove(at: random.below(live.count)))
            }
            usleep(200)  // so that each registration lives through many posts
        }
        while let last = live.popLast() { graveyard.bury(last.observer) }
    }

    private func makeListener() -> Live {
        let observer = SoakObserver()
        var registrations: [Registration] = []
        for _ in 0...random.below(2) {
            if random.percent(40) {
                let record = DeliveryRecord("hub observer of every sender", source: .allPosts(allPosts), ledger: nil)
                let receiver = Receiver(record)
                let added = Result { () throws(KVOError) in
                    try NotificationHub.default.addObserver(observer, name: .soakChanged, object: nil) {
                        observer, note in receiver.post(observer, note)
                    }
                }
                verdict.check((try? added.get()) != nil, "Swift: \(record.what) failed to register: \(added)")
                record.registered()
                registrations.append(Registration(subject: nil, record: record))
                tally.add(.listenerRegistrations)
            } else if let (slot, subject) = pool.checkOut(random: &random) {
                let record = DeliveryRecord(
                    "hub observer of a sender", source: .sequence(subject.ledger.posts), ledger: subject.ledger)
                let receiver = Receiver(record)
                let added = Result { () throws(KVOError) in
                    try NotificationHub.default.addObserver(observer, name: .soakChanged, object: subject) {
                        observer, note in receiver.post(observer, note)
                    }
                }
                verdict.check((try? added.get()) != nil, "Swift: \(record.what) failed to register: \(added)")
                record.registered()
                pool.checkIn(subject, slot: slot)
                registrations.append(Registration(subject: subject, record: record))
                tally.add(.listenerRegistrations)
            }
        }
        registrations.forEach { observer.track($0.record) }
        return Live(observer: observer, registrations: registrations)
    }

    private func retire(_ listener: Live) {
        switch random.below(3) {
        case 0:
            DeliveryRecord.end(listener.registrations.map(\.record)) {
                NotificationHub.default.removeObserver(listener.observer)
            }
        case 1:
            if let registration = listener.registrations.randomElement(using: &random),
                let subject = registration.subject
            {
                // Removes every registration of the observer for this sender.
                let sameSender = listener.registrations.filter { $0.subject === subject }.map(\.record)
                DeliveryRecord.end(sameSender) {
                    NotificationHub.default.removeObserver(listener.observer, name: .soakChanged, object: subject)
                }
            }
        default:
            break
        }
        graveyard.bury(listener.observer)
    }
}

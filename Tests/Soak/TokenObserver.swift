// TokenObserver.swift — a Swift-layer thread observing with tokens.
//
// Keeps up to eight ObservationTokens alive on pool subjects: `observe(\.value)`
// or `observe(\.items)` with every option combination, or NotificationHub's
// token-style `addObserver(forName:object:)` for a subject's posts. Ends them
// with invalidate(), invalidateAndWait() (after which no handler may be
// entered) or by dropping the token, while mutators keep changing the subjects
// and subjects die on other threads.

#if canImport(Glibc)
import Glibc
#endif
import SwiftKVO

final class TokenObserver {
    private struct Live {
        var token: ObservationToken?
        let record: DeliveryRecord
    }

    private let pool: SubjectPool
    private var random: SoakRandom
    private var live: [Live] = []
    private(set) var tally = LocalTally()

    init(pool: SubjectPool, random: SoakRandom) {
        self.pool = pool
        self.random = random
    }

    func run(_ round: RoundClock) {
        while round.running {
            if live.count < 8 && (live.isEmpty || random.percent(55)) {
                register()
            } else {
                end(at: random.below(live.count))
            }
            usleep(100)  // so that each observation lives through many changes
        }
        while !live.isEmpty { end(at: live.count - 1) }
    }

    private func register() {
        guard let (slot, subject) = pool.checkOut(random: &random) else { return }
        defer { pool.checkIn(subject, slot: slot) }
        let options = ObservingOptions(rawValue: UInt32(random.below(16)))
        let record: DeliveryRecord
        let outcome: Result<ObservationToken, KVOError>
        switch random.below(7) {
        case 0..<3:
            record = DeliveryRecord(
                "token observation of value", source: .sequence(subject.ledger.value), options: options,
                ledger: subject.ledger)
            let receiver = Receiver(record)
            outcome = Result { () throws(KVOError) in
                try subject.observe(\.value, options: options, changeHandler: { receiver.value($0, $1) })
            }
        case 3..<6:
            record = DeliveryRecord(
                "token observation of items", source: .sequence(subject.ledger.items), options: options,
                ledger: subject.ledger)
            let receiver = Receiver(record)
            outcome = Result { () throws(KVOError) in
                try subject.observe(\.items, options: options, changeHandler: { receiver.items($0, $1) })
            }
        default:
            record = DeliveryRecord(
                "hub token for a sender", source: .sequence(subject.ledger.posts), ledger: subject.ledger)
            let receiver = Receiver(record)
            outcome = Result { () throws(KVOError) in
                try NotificationHub.default.addObserver(forName: .soakChanged, object: subject) { note in
                    receiver.post(nil, note)
                }
            }
        }
        record.registered()
        guard case .success(let token) = outcome, token.isValid else {
            verdict.check(false, "Swift: \(record.what) \(record.id) failed to register: \(outcome)")
            return
        }
        tally.add(.tokenObservations)
        live.append(Live(token: token, record: record))
    }

    private func end(at index: Int) {
        var observation = live.remove(at: index)  // now the token's only reference
        let record = observation.record
        switch random.below(3) {
        case 0:
            record.end { observation.token?.invalidate() }
        case 1:
            record.end(strict: true) {
                do {
                    try observation.token?.invalidateAndWait()
                } catch {
                    verdict.fail("Swift: invalidateAndWait outside any handler threw \(error)")
                }
            }
        default:
            // The token's deinit removes the observation.
            record.end { observation.token = nil }
        }
    }
}

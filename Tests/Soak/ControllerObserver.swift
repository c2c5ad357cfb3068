// ControllerObserver.swift — a Swift-layer thread observing through KVOControllers.
//
// Keeps up to four SoakObservers, each with a KVOController (retaining its
// subjects or not) observing one to three pool subjects' value or items with
// blocks. Retires an observer by unobserving one key path of one subject,
// everything (unobserveAll), or nothing, and then hands it to the graveyard:
// it dies there — or on a mutator thread whose block still holds it — with its
// controller, which removes what is left; with `retainsObserved` the subjects
// it kept alive may die then too. Also checks that observing the same key path
// of the same subject twice answers `alreadyObserving`.

#if canImport(Glibc)
import Glibc
#endif
import SwiftKVO

final class ControllerObserver {
    /// One observation made through an observer's controller.
    private struct Observation {
        weak var subject: Subject?
        let observesValue: Bool
        let record: DeliveryRecord
    }

    private struct Live {
        let observer: SoakObserver
        let controller: KVOController<SoakObserver>
        var observations: [Observation]
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
            if live.count < 4 && (live.isEmpty || random.percent(60)) {
                live.append(makeObserver())
            } else {
                retire(live.remove(at: random.below(live.count)))
            }
            usleep(200)  // so that each observation lives through many changes
        }
        while let last = live.popLast() { graveyard.bury(last.observer) }
    }

    private func makeObserver() -> Live {
        let observer = SoakObserver()
        let controller = KVOController(observer: observer, retainsObserved: random.percent(50))
        observer.controller = controller
        var observations: [Observation] = []
        for _ in 0...random.below(3) {
            guard let (slot, subject) = pool.checkOut(random: &random) else { continue }
            if observations.contains(where: { $0.subject === subject }) {
                pool.checkIn(subject, slot: slot)
                continue
            }
            observations.append(observe(subject, with: controller))
            pool.checkIn(subject, slot: slot)
        }
        observations.forEach { observer.track($0.record) }
        return Live(observer: observer, controller: controller, observations: observations)
    }

    /// Registers one observation of `subject` (held by the caller).
    private func observe(_ subject: Subject, with controller: KVOController<SoakObserver>) -> Observation {
        let options = ObservingOptions(rawValue: UInt32(random.below(16)))
        let observesValue = random.percent(50)
        let record = DeliveryRecord(
            observesValue ? "controller observation of value" : "controller observation of items",
            source: .sequence(observesValue ? subject.ledger.value : subject.ledger.items), options: options,
            ledger: subject.ledger)
        let receiver = Receiver(record)
        let outcome = Result { () throws(KVOError) in
            if observesValue {
                try controller.observe(subject, \.value, options: options) { observer, subject, change in
                    receiver.checkAlive(observer)
                    receiver.value(subject, change)
                }
            } else {
                try controller.observe(subject, \.items, options: options) { observer, subject, change in
                    receiver.checkAlive(observer)
                    receiver.items(subject, change)
                }
            }
        }
        record.registered()
        verdict.check(
            outcome == .success(true), "Swift: \(record.what) \(record.id) failed: \(outcome)")
        tally.add(.controllerObservations)
        if random.percent(20) {
            let again = Result { () throws(KVOError) in
                observesValue
                    ? try controller.observe(subject, \.value) { _, _, _ in }
                    : try controller.observe(subject, \.items) { _, _, _ in }
            }
            verdict.check(
                again == .success(false),
                "Swift: observing a key path twice through one controller answered \(again), not \"already observing\"")
        }
        return Observation(subject: subject, observesValue: observesValue, record: record)
    }

    private func retire(_ observer: Live) {
        switch random.below(3) {
        case 0:
            if let observation = observer.observations.randomElement(using: &random),
                let subject = observation.subject
            {
                observation.record.end {
                    if observation.observesValue {
                        observer.controller.unobserve(subject, \.value)
                    } else {
                        observer.controller.unobserve(subject, \.items)
                    }
                }
            }
        case 1:
            DeliveryRecord.end(observer.observations.map(\.record)) { observer.controller.unobserveAll() }
        default:
            break
        }
        graveyard.bury(observer.observer)
    }
}

// Mutator.swift — a Swift-layer thread that changes subjects.
//
// Checks a subject out of the pool and makes a burst of changes: assigns its
// `@Observed` value, inserts, removes or replaces one of its `@ObservedArray`
// items through `mutableArray` (or assigns the whole array), or posts the
// shared notification name from it — each one the next numbered change of its
// sequence, traced (SwiftTrace). Now and then it replaces the subject with a
// new one and hands the old one to the graveyard, while it is still observed.

#if canImport(Glibc)
import Glibc
#endif
import SwiftKVO

final class Mutator {
    private let pool: SubjectPool
    private let graveyard: Graveyard
    private var random: SoakRandom
    private let trace = SwiftTrace()
    private(set) var tally = LocalTally()

    init(pool: SubjectPool, graveyard: Graveyard, random: SoakRandom) {
        self.pool = pool
        self.graveyard = graveyard
        self.random = random
    }

    func run(_ round: RoundClock) {
        while round.running {
            guard let (slot, subject) = pool.checkOut(random: &random) else {
                sched_yield()
                continue
            }
            for _ in 0...random.below(6) { change(subject) }
            if random.percent(3) {
                graveyard.bury(subject)
                pool.checkIn(Subject(), slot: slot)
            } else {
                pool.checkIn(subject, slot: slot)
            }
            if random.percent(25) { sched_yield() }
        }
    }

    private func change(_ subject: Subject) {
        switch random.below(3) {
        case 0:
            let number = subject.ledger.value.begin()
            trace.run("change \(number) of a value", ordered: true) { subject.value = Stamp(number: number) }
            subject.ledger.value.end(number)
            tally.add(.swiftChanges)
        case 1:
            let number = subject.ledger.items.begin()
            trace.run("change \(number) of items", ordered: true) { changeItems(subject, number) }
            subject.ledger.items.end(number)
            tally.add(.arrayChanges)
        default:
            post(from: subject, trace: trace)
            tally.add(.posts)
        }
    }

    /// One change of `items` that certainly announces (never an out-of-range no-op).
    private func changeItems(_ subject: Subject, _ number: UInt64) {
        let count = subject.items.count
        let items = subject.mutableArray(\.items)
        if count >= 12 {
            subject.items = [number]
            return
        }
        switch count == 0 ? 0 : random.below(3) {
        case 0: items.insert(number, at: random.below(count + 1))
        case 1: items.remove(at: random.below(count))
        default: items.replace(at: random.below(count), with: number)
        }
    }
}

// SubjectPool.swift — the shared subjects, each held by one thread at a time.
//
// `@Observed` storage is a plain stored property: the library leaves
// concurrent writes of one property of one object to its user. So a thread
// checks a subject out to change it or to register an observation of it (an
// initial notification reads the value) and checks it back in. Removals,
// deliveries and deaths still happen concurrently with everything else:
// removing needs no subject, other subjects' changes announce the same keys,
// and a subject replaced in the pool dies wherever its last reference goes.

final class SubjectPool: Sendable {
    private let size: Int
    private let slots: Locked<[Subject?]>

    init(size: Int) {
        self.size = size
        slots = Locked((0..<size).map { _ in Subject() })
    }

    /// Takes a subject out of the pool: (its slot, the subject), or nil if every probed slot
    /// was out.
    func checkOut(random: inout SoakRandom) -> (slot: Int, subject: Subject)? {
        let start = random.below(size)
        return slots.withLock { slots in
            for probe in 0..<slots.count {
                let slot = (start + probe) % slots.count
                if let subject = slots[slot] {
                    slots[slot] = nil
                    return (slot, subject)
                }
            }
            return nil
        }
    }

    /// Puts `subject` (the one checked out, or its replacement) back into `slot`.
    func checkIn(_ subject: Subject, slot: Int) {
        slots.withLock { $0[slot] = subject }
    }

    /// Empties the pool (end of round, no other thread left): the subjects die here unless
    /// something else still holds them.
    func drain() {
        slots.withLock { $0.removeAll() }
    }
}

import Foundation
import Testing

@testable import SwiftKVO

/// The hub's observer table: shrinking, lookup of a registration under its observer's address,
/// reused addresses. Serialized, and no test holds more than a few hundred observers at once:
/// the table is process-wide, and observers held here would keep it from shrinking, and from
/// purging dead observers soon, for the tests of other suites running meanwhile
/// (NotificationHubTests'). The table still grows past the size below which it never shrinks
/// (96), so every test here shrinks it.
@Suite(.serialized) struct HubTableTests {
    private func uniqueName(_ suffix: String = "", _ function: String = #function) -> NotificationHub.Name {
        NotificationHub.Name("test.hubTable.\(function).\(suffix)")
    }

    /// The table gave room back since `peak`, unless observers of other
    /// suites (running in parallel; the table is process-wide) still fill a
    /// quarter of it, which is when it keeps its room: a table of capacity
    /// `peak` holding fewer than `peak / 4` would have been rebuilt at the
    /// removal that took it there. (`ours`: how many observers this test had.)
    private func expectShrank(
        from peak: Int, ours: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let now = NotificationHub.tableOccupancy
        guard now.count * 4 < peak else { return }
        #expect(now.capacity < peak, "the table did not shrink (\(now.count) of \(now.capacity), \(ours) ours at the peak)", sourceLocation: sourceLocation)
    }

    /// A dead observer's registration, removed by registration after a new
    /// observer at its address registered, is "not found" and leaves every
    /// registration of the new one in place.
    @Test func aDeadObserversRegistrationNeverRemovesTheNewObserverAtItsAddress() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let other = uniqueName("other")
        var reused = 0
        for _ in 0..<200 where reused < 5 {
            var address: UInt = 0
            var deadRegistrations: [NotificationHub.Registration] = []
            do {
                let dead = Observer()
                address = Engine.address(of: dead)
                deadRegistrations.append(try hub.addObserver(dead, name: name) { _, _ in })
                deadRegistrations.append(try hub.addObserver(dead, name: other) { _, _ in })
            }  // dies; nothing posts, so its registrations stay filed
            let newcomer = Observer()
            guard Engine.address(of: newcomer) == address else { continue }
            reused += 1
            let counter = Counter()
            let mine = try hub.addObserver(newcomer, name: name) { _, _ in counter.increment() }
            let mine2 = try hub.addObserver(newcomer, name: other) { _, _ in counter.increment() }
            // Same observer address, so only the tokens tell them apart.
            #expect(!deadRegistrations.contains(mine) && !deadRegistrations.contains(mine2))
            for registration in deadRegistrations { #expect(hub.removeObserver(registration) == false) }
            #expect(hub.registrations(of: newcomer).map(\.registration) == [mine, mine2])
            hub.post(name: name)
            hub.post(name: other)
            #expect(counter.count == 2)
            #expect(hub.removeObserver(mine) == true)
            #expect(hub.removeObserver(mine) == false)
            #expect(hub.removeObserver(newcomer) == 1)
            hub.post(name: name)
            hub.post(name: other)
            #expect(counter.count == 2)
        }
        #expect(reused > 0 || getenv("SWIFTKVO_SANITIZER") != nil, "no address was reused")
    }

    /// A dead observer's registration removed by registration before the new
    /// observer at its address registers: removed once (it was still
    /// registered), and the new observer then starts with only its own.
    @Test func aDeadObserversRegistrationRemovedBeforeTheNewOneRegistersIsRemovedOnce() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        var reused = 0
        for _ in 0..<200 where reused < 5 {
            var address: UInt = 0
            var dead: [NotificationHub.Registration] = []
            do {
                let observer = Observer()
                address = Engine.address(of: observer)
                dead.append(try hub.addObserver(observer, name: name) { _, _ in })
                dead.append(try hub.addObserver(observer, name: name) { _, _ in })
            }
            let newcomer = Observer()
            guard Engine.address(of: newcomer) == address else { continue }
            reused += 1
            #expect(hub.registrations(of: newcomer).isEmpty)
            #expect(hub.removeObserver(dead[0]) == true)
            #expect(hub.removeObserver(dead[0]) == false)
            let counter = Counter()
            let mine = try hub.addObserver(newcomer, name: name) { _, _ in counter.increment() }
            #expect(hub.removeObserver(dead[1]) == false)  // removed when the newcomer was filed
            #expect(hub.registrations(of: newcomer).map(\.registration) == [mine])
            // The post also meets dead observers of iterations whose address
            // was not reused: their registrations go, and only the newcomer's stays.
            hub.post(name: name)
            #expect(counter.count == 1)
            flushReleases()
            #expect(liveObservations(of: name) == 1)
            #expect(hub.removeObserver(newcomer, name: name) == 1)
            #expect(hub.removeObserver(mine) == false)
        }
        #expect(reused > 0 || getenv("SWIFTKVO_SANITIZER") != nil, "no address was reused")
    }

    /// Many observers with several registrations each: removals by name and
    /// sender, then by registration, then by observer, each count exactly
    /// what is left, also once the table has shrunk under them.
    @Test func partialRemovalsByNameByObjectThenByRegistrationCountExactlyWhatIsLeft() throws {
        let hub = NotificationHub.default
        let n1 = uniqueName("1")
        let n2 = uniqueName("2")
        let a = Account()
        let b = Observer()  // a plain sender
        let observers = (0..<200).map { _ in Observer() }
        let fired = Counter()
        var registrations: [[NotificationHub.Registration]] = []
        for observer in observers {
            registrations.append([
                try hub.addObserver(observer, name: n1, object: a) { _, _ in fired.increment() },
                try hub.addObserver(observer, name: n1, object: b) { _, _ in fired.increment() },
                try hub.addObserver(observer, name: n2) { _, _ in fired.increment() },
                try hub.addObserver(observer, name: n2, object: a) { _, _ in fired.increment() },
            ])
        }
        let peak = NotificationHub.tableOccupancy.capacity
        // Remove most observers entirely so the table shrinks under the rest.
        let kept = 20
        for observer in observers[kept...] { #expect(hub.removeObserver(observer) == 4) }
        expectShrank(from: peak, ours: observers.count)
        for (index, observer) in observers[..<kept].enumerated() {
            #expect(hub.registrations(of: observer).map(\.registration) == registrations[index])
        }
        hub.post(name: n1, object: a)
        hub.post(name: n2)
        #expect(fired.count == kept * 2)
        for (index, observer) in observers[..<kept].enumerated() {
            let mine = registrations[index]
            #expect(hub.removeObserver(observer, name: n1, object: a) == 1)
            #expect(hub.removeObserver(observer, name: n1, object: a) == 0)
            #expect(hub.removeObserver(mine[0]) == false)
            #expect(hub.removeObserver(mine[1]) == true)
            #expect(hub.registrations(of: observer).map(\.registration) == [mine[2], mine[3]])
            #expect(hub.removeObserver(observer, name: n2, object: a) == 1)
            #expect(hub.removeObserver(mine[3]) == false)
            #expect(hub.removeObserver(observer) == 1)
            #expect(hub.removeObserver(mine[2]) == false)
            #expect(hub.registrations(of: observer).isEmpty)
        }
        hub.post(name: n1, object: a)
        hub.post(name: n1, object: b)
        hub.post(name: n2, object: a)
        #expect(fired.count == kept * 2)
        #expect(liveObservations(of: n1) == 0)
        #expect(liveObservations(of: n2) == 0)
    }

    /// Registrations removed one by one (the observer stays filed until its
    /// last goes) also shrink the table, and never lose another observer's.
    @Test func removingEveryRegistrationOneByOneShrinksAndKeepsTheOthers() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let survivors = (0..<16).map { _ in Observer() }
        let fired = Counter()
        let survivorRegistrations = try survivors.map { observer in
            try hub.addObserver(observer, name: name) { _, _ in fired.increment() }
        }
        let observers = (0..<200).map { _ in Observer() }
        let registrations = try observers.map { observer in
            try (0..<2).map { _ in try hub.addObserver(observer, name: name) { _, _ in fired.increment() } }
        }
        let peak = NotificationHub.tableOccupancy.capacity
        for pair in registrations {
            #expect(hub.removeObserver(pair[1]) == true)
            #expect(hub.removeObserver(pair[0]) == true)
            #expect(hub.removeObserver(pair[0]) == false)
        }
        expectShrank(from: peak, ours: observers.count)
        for observer in observers { #expect(hub.removeObserver(observer) == 0) }
        hub.post(name: name)
        #expect(fired.count == survivors.count)
        for (observer, registration) in zip(survivors, survivorRegistrations) {
            #expect(hub.registrations(of: observer).map(\.registration) == [registration])
            #expect(hub.removeObserver(registration) == true)
        }
        #expect(liveObservations(of: name) == 0)
    }

    /// Each registration removed from two threads by registration and from a
    /// third by its observer (by name, or whole) while other threads add and
    /// remove observers (growing and shrinking the table) and post: every
    /// registration is counted removed exactly once, and no post started
    /// after the removals returned calls any of their blocks. (A post already
    /// under way may still call a block whose removal just returned.)
    @Test func concurrentRemovalsCountEveryRegistrationExactlyOnceAndNothingRunsAfter() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let perObserver = 3
        let count = 150
        let observers = (0..<count).map { _ in Observer() }
        // Per registration: how many removals by registration returned true.
        let removed = (0..<(count * perObserver)).map { _ in LockedState(0) }
        let calls = Counter()
        var registrations: [NotificationHub.Registration] = []
        for observer in observers {
            for _ in 0..<perObserver {
                registrations.append(try hub.addObserver(observer, name: name) { _, _ in calls.increment() })
            }
        }
        let counted = LockedState(0)
        let churnFailures = Counter()
        let stop = Counter()
        let posters = (0..<1).map { _ in
            Thread {
                while stop.count == 0 { hub.post(name: name) }
            }
        }
        posters.forEach { $0.start() }
        let registrationsCopy = registrations
        runConcurrently(5) { thread in
            switch thread {
            case 0, 1:
                // Both remove every registration, in opposite orders.
                let order = thread == 0 ? Array(registrationsCopy.indices) : registrationsCopy.indices.reversed()
                for index in order where hub.removeObserver(registrationsCopy[index]) {
                    removed[index].withLock { $0 += 1 }
                    counted.withLock { $0 += 1 }
                }
            case 2:
                // Removes whole observers (every other one) and by name (the rest).
                for (o, observer) in observers.enumerated() {
                    let n = o % 2 == 0 ? hub.removeObserver(observer) : hub.removeObserver(observer, name: name)
                    if n > 0 { counted.withLock { $0 += n } }
                }
            default:
                // Churn: grows and shrinks the table.
                for _ in 0..<4 {
                    let churn = (0..<120).map { _ in Observer() }
                    for observer in churn { _ = try? hub.addObserver(observer, name: name) { _, _ in } }
                    for observer in churn where hub.removeObserver(observer) != 1 { churnFailures.increment() }
                }
            }
        }
        stop.increment()
        while posters.contains(where: { !$0.isFinished }) { sched_yield() }
        #expect(counted.withLock { $0 } == count * perObserver)
        for observer in observers { #expect(hub.registrations(of: observer).isEmpty) }
        flushReleases()
        #expect(liveObservations(of: name) == 0)
        // A post started after every removal returned calls nothing.
        let before = calls.count
        for _ in 0..<10 { hub.post(name: name) }
        #expect(calls.count == before)
        // No registration was reported removed by both removing threads.
        #expect(removed.allSatisfy { $0.withLock { $0 } <= 1 })
        #expect(churnFailures.count == 0)
    }

    /// Threads that each add, query and remove their own observers while the
    /// table shrinks under them always see exactly their own registrations.
    @Test func registrationsOfAreExactWhileOtherThreadsShrinkTheTable() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let failures = Counter()
        runConcurrently(4) { thread in
            for round in 0..<20 {
                let observers = (0..<60).map { _ in Observer() }
                var mine: [[NotificationHub.Registration]] = []
                for observer in observers {
                    let regs = (0...(round % 3)).compactMap { _ in
                        try? hub.addObserver(observer, name: name) { _, _ in }
                    }
                    mine.append(regs)
                }
                for (observer, regs) in zip(observers, mine)
                where hub.registrations(of: observer).map(\.registration) != regs {
                    failures.increment()
                }
                // Remove the first of each by registration, the rest by observer.
                for (observer, regs) in zip(observers, mine) {
                    if hub.removeObserver(regs[0]) != true { failures.increment() }
                    if hub.removeObserver(observer) != regs.count - 1 { failures.increment() }
                    if hub.removeObserver(regs[0]) != false { failures.increment() }
                }
                _ = thread
            }
        }
        #expect(failures.count == 0)
        #expect(liveObservations(of: name) == 0)
    }

    /// Blocks that remove their own registration (by registration) during a
    /// post, shrinking the table as they go: each runs once, and a removal
    /// by registration from inside a block reports it removed exactly once.
    @Test func blocksRemovingTheirOwnRegistrationDuringAPostRunOnceAndCountOnce() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observers = (0..<200).map { _ in Observer() }
        let calls = Counter()
        let removedTrue = Counter()
        let removedFalse = Counter()
        for observer in observers {
            let own = LockedState<NotificationHub.Registration?>(nil)
            let registration = try hub.addObserver(observer, name: name) { _, _ in
                calls.increment()
                guard let mine = own.withLock({ $0 }) else { return }
                if hub.removeObserver(mine) { removedTrue.increment() } else { removedFalse.increment() }
            }
            own.withLock { $0 = registration }
        }
        let peak = NotificationHub.tableOccupancy.capacity
        hub.post(name: name)
        hub.post(name: name)
        #expect(calls.count == observers.count)
        #expect(removedTrue.count == observers.count)
        #expect(removedFalse.count == 0)
        expectShrank(from: peak, ours: observers.count)
        for observer in observers {
            #expect(hub.registrations(of: observer).isEmpty)
            #expect(hub.removeObserver(observer) == 0)
        }
    }
}

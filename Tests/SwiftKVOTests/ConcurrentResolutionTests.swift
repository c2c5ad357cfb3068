// Key paths first resolved from several threads at once, also beside plain readers of the
// same objects: every thread gets a working observation and the same decision.

import Foundation
import Synchronization
import Testing

@testable import SwiftKVO

/// For the concurrent first registration.
final class CaRace: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \CaRace.a, "b": \CaRace.b] }
    @Observed var a = 0
    @Observed var b = 0
    var c: Int { CaRuns.bump("CaRace.c"); return a }
}

final class CaGenRace<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \CaGenRace.a, "b": \CaGenRace.b] }
    @Observed var a = 0
    @Observed var b = 0
}

/// A generic observable class with a wrapper of each kind, to resolve.
private final class Crate<Element: Hashable & Sendable>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["label": \Crate.label, "first": \Crate.first, "items": \Crate.items, "tags": \Crate.tags] }
    @Observed var label = ""
    @Observed var first: Element
    @ObservedArray var items: [Element] = []
    @ObservedSet var tags: Set<Element> = []
    init(_ first: Element) { self.first = first }
}

/// A subclass adding wrappers to an observable base with its own.
private class Vessel: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    @Observed var load = 0
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \Vessel.name, "load": \Vessel.load] }
}

private final class Tanker: Vessel, @unchecked Sendable {
    @Observed var fuel = 0.0
    @ObservedArray var ports: [String] = []
    override class var observableKeyPaths: [String: AnyKeyPath] {
        ["name": \Tanker.name, "load": \Tanker.load, "fuel": \Tanker.fuel, "ports": \Tanker.ports]
    }
}

/// A two-link chain whose wrappers are never set (their setter state stays
/// unresolved, so every probe of a fresh object computes their offsets).
private final class Hold: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["count": \Hold.count, "label": \Hold.label] }
    @Observed var count = 0
    @Observed var label = ""
}

private final class Ship: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["hold": \Ship.hold, "flag": \Ship.flag] }
    @Observed var hold = Hold()
    @Observed var flag = 0
}

/// Serialized: each test starts up to eight threads of its own.
@Suite(.serialized, .needsLayout("its registrations")) struct ConcurrentResolutionTests {
    /// Eight threads first resolving key paths of one object at once (each
    /// wrapper kind, a generic class, a subclass's own and inherited
    /// wrappers) all get working observations: one change reaches each once.
    @Test func firstResolutionFromEightThreadsOfOneObjectGivesEachAWorkingObservation() throws {
        if refusedWithoutLayout({ _ = try Crate<Int>(0).observe(\.label) { _, _ in } }) { return }
        for round in 0..<20 {
            let crate = Crate<Int>(round)
            let tanker = Tanker()
            let counters = (0..<8).map { _ in (0..<8).map { _ in Counter() } }
            let tokens = LockedState<[ObservationToken]>([])
            runConcurrently(8) { thread in
                let c = counters[thread]
                var mine: [ObservationToken] = []
                // Every thread resolves every key path, in a thread-dependent order.
                let steps: [() throws -> ObservationToken] = [
                    { try crate.observe(\.label) { _, _ in c[0].increment() } },
                    { try crate.observe(\.first) { _, _ in c[1].increment() } },
                    { try crate.observe(\.items) { _, _ in c[2].increment() } },
                    { try crate.observe(\.tags) { _, _ in c[3].increment() } },
                    { try tanker.observe(\.name) { _, _ in c[4].increment() } },
                    { try tanker.observe(\.load) { _, _ in c[5].increment() } },
                    { try tanker.observe(\.fuel) { _, _ in c[6].increment() } },
                    { try tanker.observe(\.ports) { _, _ in c[7].increment() } },
                ]
                for step in 0..<steps.count {
                    if let token = try? steps[(step + thread) % steps.count]() { mine.append(token) }
                }
                tokens.withLock { $0 += mine }
            }
            #expect(tokens.withLock { $0.count } == 64)
            crate.label = "x"
            crate.first += 1
            crate.items.append(1)
            crate.tags.insert(1)
            tanker.name = "t"
            tanker.load = 1
            tanker.fuel = 1
            tanker.ports.append("p")
            #expect(counters.flatMap { $0.map(\.count) } == Array(repeating: 1, count: 64))
            tokens.withLock { $0.forEach { $0.invalidate() } }
        }
    }

    /// Observing by name from seven threads at once, the first resolution
    /// of each key of one object, beside a thread reading the same
    /// properties plainly: the reads see the values, and one change reaches
    /// each observation once. (Under ThreadSanitizer this also checks that
    /// threads probing one object never take their modifying accesses to a
    /// wrapper at once.)
    @Test func firstObservationsByNameFromSevenThreadsBesideAPlainReaderEachWork() throws {
        let wrong = Counter()
        for round in 0..<30 {
            let account = Account(name: "n\(round)")
            let tanker = Tanker()
            let fired = Counter()
            let tokens = LockedState<[ObservationToken]>([])
            runConcurrently(8) { thread in
                if thread == 7 {
                    // A plain reader: no key path resolution.
                    for _ in 0..<300 where account.name != "n\(round)" || tanker.load != 0 || tanker.fuel != 0 {
                        wrong.increment()
                    }
                    return
                }
                var mine: [ObservationToken] = []
                for key in ["name", "balance"] {
                    if let token = try? account.observe(keyPath: key, changeHandler: { _, _ in fired.increment() }) {
                        mine.append(token)
                    }
                }
                for key in ["load", "fuel", "ports", "name"] {
                    if let token = try? tanker.observe(keyPath: key, changeHandler: { _, _ in fired.increment() }) {
                        mine.append(token)
                    }
                }
                if (try? account.value(forKeyPath: "name")) as? String != "n\(round)" { wrong.increment() }
                tokens.withLock { $0 += mine }
            }
            #expect(tokens.withLock { $0.count } == 7 * 6)
            account.name = "changed"
            account.balance = 1
            tanker.load = 1
            tanker.fuel = 1
            tanker.ports.append("p")
            tanker.name = "t"
            #expect(fired.count == 7 * 6)
            tokens.withLock { $0.forEach { $0.invalidate() } }
        }
        #expect(wrong.count == 0)
    }

    /// Observing a chain probes the objects along it on every registration:
    /// a thread observing `\.hold.count` of many fresh ships while another
    /// reads the same properties plainly. Both see the right values and
    /// every observation works. (Under ThreadSanitizer: the two observing
    /// threads probe the same fresh objects, and their modifying accesses to
    /// a wrapper must never overlap.)
    @Test func chainRegistrationsBesideAPlainReaderOfTheSameObjectsWork() throws {
        if refusedWithoutLayout({ _ = try Ship().observe(\.hold.count) { _, _ in } }) { return }
        let ships = (0..<300).map { _ in Ship() }
        let fired = Counter()
        let wrong = Counter()
        let tokens = LockedState<[ObservationToken]>([])
        runConcurrently(3) { thread in
            for ship in ships {
                switch thread {
                case 0:
                    if let token = try? ship.observe(\.hold.count, changeHandler: { _, _ in fired.increment() }) {
                        tokens.withLock { $0.append(token) }
                    } else {
                        wrong.increment()
                    }
                case 1:
                    if let token = try? ship.observe(\.hold.label, changeHandler: { _, _ in fired.increment() }) {
                        tokens.withLock { $0.append(token) }
                    } else {
                        wrong.increment()
                    }
                default:
                    for _ in 0..<3 where ship.hold.count != 0 || ship.hold.label != "" || ship.flag != 0 {
                        wrong.increment()
                    }
                }
            }
        }
        for ship in ships {
            ship.hold.count = 1
            ship.hold.label = "x"
        }
        #expect(wrong.count == 0)
        #expect(fired.count == ships.count * 2)
        tokens.withLock { $0.forEach { $0.invalidate() } }
    }

    /// A thread first resolving `\.name` of each of many fresh objects while
    /// another reads `name` of the same objects: both see the value, and the
    /// observation works.
    @Test func firstResolutionBesideAPlainReaderOfTheSameObjectWorks() throws {
        let accounts = (0..<400).map { Account(name: "a\($0)") }
        let fired = Counter()
        let wrong = Counter()
        let tokens = LockedState<[ObservationToken]>([])
        runConcurrently(2) { thread in
            for (index, account) in accounts.enumerated() {
                if thread == 0 {
                    if let token = try? account.observe(\.name, changeHandler: { _, _ in fired.increment() }) {
                        tokens.withLock { $0.append(token) }
                    } else {
                        wrong.increment()
                    }
                } else if account.name != "a\(index)" {
                    wrong.increment()
                }
            }
        }
        for account in accounts { account.name += "!" }
        #expect(wrong.count == 0)
        #expect(fired.count == accounts.count)
        tokens.withLock { $0.forEach { $0.invalidate() } }
    }

    @Test func concurrentFirstResolutionOfFreshClass() throws {
        if refusedWithoutLayout({ _ = try AtkFresh().observe(\.child?.a) { _, _ in } }) { return }
        let objects = (0..<8).map { _ in AtkFresh() }
        let delivered = Atomic<Int>(0)
        let tokens = LockedState<[ObservationToken]>([])  // a lock ThreadSanitizer sees
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let object = objects[i]
            var mine: [ObservationToken] = []
            do {
                mine.append(try object.observe(\.a) { _, _ in delivered.add(1, ordering: .relaxed) })
                mine.append(try object.observe(keyPath: "b") { _, _ in delivered.add(1, ordering: .relaxed) })
                mine.append(try object.observe(\.sum) { _, _ in delivered.add(1, ordering: .relaxed) })
                mine.append(try object.observe(\.child?.a) { _, _ in delivered.add(1, ordering: .relaxed) })
            } catch {
                Issue.record("registration failed: \(error)")
            }
            object.a = 1  // a, sum
            object.b = 2  // b, sum
            object.child = AtkFresh()  // child?.a
            object.child?.a = 3  // child?.a
            tokens.withLock { $0.append(contentsOf: mine) }
        }
        #expect(delivered.load(ordering: .relaxed) == 8 * 6)
        tokens.withLock { $0.forEach { _ = $0.invalidate() } }
    }

    @Test func concurrentFirstRegistrationsAgree() throws {
        if refusedWithoutLayout({ _ = try CaRace().observe(\.a) { _, _ in } }) { return }
        let objects = (0..<8).map { _ in CaRace() }
        let outcomes = Recorder<String>()
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let object = objects[index]
            var tokens: [ObservationToken] = []
            for keyPath in [\CaRace.a, \CaRace.c, \CaRace.b, \CaRace.c] {
                do {
                    tokens.append(try object.observe(keyPath, options: .new) { _, _ in })
                    outcomes.add(keyPath == \CaRace.c ? "c accepted" : "ok")
                } catch {
                    outcomes.add(keyPath == \CaRace.c ? "c refused" : "property refused")
                }
            }
            tokens.forEach { _ = $0.invalidate() }
        }
        #expect(outcomes.all.filter { $0 == "ok" }.count == 16)
        #expect(outcomes.all.filter { $0 == "c refused" }.count == 16)
    }

    @Test func concurrentRegistrationsOnGenericSpecializations() throws {
        enum T0 {}
        enum T1 {}
        if refusedWithoutLayout({ _ = try CaGenRace<T0>().observe(\.a) { _, _ in } }) { return }
        let log = Recorder<String>()
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            do {
                if index % 2 == 0 {
                    let o = CaGenRace<T0>()
                    let t = try o.observe(\.a, options: .new) { _, c in log.add("a\(c.newValue!)") }
                    o.a = index
                    _ = t.invalidate()
                } else {
                    let o = CaGenRace<T1>()
                    let t = try o.observe(\.b, options: .new) { _, c in log.add("b\(c.newValue!)") }
                    o.b = index
                    _ = t.invalidate()
                }
            } catch {
                log.add("refused \(error)")
            }
        }
        #expect(log.all.count == 8)
        #expect(!log.all.contains { $0.hasPrefix("refused") })
    }
}

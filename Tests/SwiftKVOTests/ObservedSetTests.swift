import Foundation
import Synchronization
import Testing

@testable import SwiftKVO

// Unordered to-many properties (SPEC §2 item 2): each set mutation notifies
// once, with its kind and the members it added and removed, no indexes.

private final class Team: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedSet var members: Set<String> = ["ada", "grace"]
    static var observableKeyPaths: [String: AnyKeyPath] { ["members": \Team.members] }
}

/// "kind old new" with each set sorted, for comparing logs.
private func describe(_ change: ObservedChange<Set<String>>) -> String {
    func spell(_ set: Set<String>?) -> String { set.map { "[\($0.sorted().joined(separator: ","))]" } ?? "-" }
    return "\(change.isPrior ? "prior " : "")\(change.kind) \(spell(change.oldValue)) \(spell(change.newValue))"
}

@Suite(.needsLayout("its registrations")) struct ObservedSetTests {
    @Test func eachMutationNotifiesItsKindAndMembers() throws {
        let team = Team()
        let log = Log<String>()
        let token = try team.observe(\.members, options: [.old, .new]) { _, change in
            #expect(change.indexes.isEmpty)
            log.append(describe(change))
        }
        let members = team.mutableSet(\.members)
        members.insert("linus")
        members.remove("ada")
        members.formUnion(["ken", "grace"])
        members.subtract(["ken", "nobody"])
        members.formIntersection(["grace", "linus", "x"])
        members.replaceAll(with: ["barbara", "grace"])
        members.removeAll()
        team.members = ["ada"]
        #expect(
            log.values == [
                "insertion - [linus]",
                "removal [ada] -",
                "insertion - [ken]",
                "removal [ken] -",
                "removal [] -",
                "replacement [linus] [barbara]",
                "removal [barbara,grace] -",
                "setting [] [ada]",
            ])
        token.invalidate()
    }

    @Test func aMutationThatChangesNothingStillNotifies() throws {
        let team = Team()
        let calls = Counter()
        let token = try team.observe(\.members, options: .new) { _, change in
            #expect(change.kind == .insertion)
            #expect(change.newValue == [])
            calls.increment()
        }
        team.mutableSet(\.members).insert("ada")
        #expect(calls.count == 1)
        token.invalidate()
    }

    @Test func priorNotificationCarriesTheMembersToBeRemovedAndNoNewValue() throws {
        let team = Team()
        let log = Log<String>()
        let token = try team.observe(\.members, options: [.old, .new, .prior]) { _, change in
            log.append(describe(change))
        }
        team.mutableSet(\.members).subtract(["ada"])
        team.mutableSet(\.members).insert("linus")
        #expect(
            log.values == [
                "prior removal [ada] -", "removal [ada] -",
                "prior insertion - -", "insertion - [linus]",
            ])
        token.invalidate()
    }

    @Test func didChangeCarriesWhatTheMutationMadeAfterAPriorObserverChangedTheSet() throws {
        let team = Team()
        let log = Log<String>()
        let clearer = try team.observe(\.members, options: .prior) { team, change in
            if change.isPrior { team.members = [] }  // callbacks may change values (§2.6)
        }
        let token = try team.observe(\.members, options: [.old, .new]) { _, change in
            if change.kind != .setting { log.append(describe(change)) }
        }
        team.mutableSet(\.members).subtract(["ada"])
        #expect(team.members.isEmpty)
        #expect(log.values == ["removal [] -"])
        clearer.invalidate()
        token.invalidate()
    }

    @Test func mutableSetValueByNameIsTheSameMutation() throws {
        let team = Team()
        let log = Log<String>()
        let token = try team.observe(keyPath: "members", options: .new) { _, change in
            log.append("\(change.kind) \((change.newValue as? Set<String>)?.sorted() ?? [])")
        }
        try team.mutableSetValue(forKey: "members", of: String.self).insert("linus")
        #expect(log.values == ["insertion [\"linus\"]"])
        #expect(throws: KVOError.typeMismatch) { try team.mutableSetValue(forKey: "members", of: Int.self) }
        token.invalidate()
    }

    @Test func manualSetPropertyIsMutatedWithoutNotification() throws {
        final class Quiet: KeyValueObservable, @unchecked Sendable {
            let kvoRegistrar = KVORegistrar()
            static var observableKeyPaths: [String: AnyKeyPath] { ["tags": \Quiet.tags] }
            @ObservedSet(notifiesAutomatically: false) var tags: Set<Int> = []
        }
        let quiet = Quiet()
        let calls = Counter()
        let token = try quiet.observe(\.tags) { _, _ in calls.increment() }
        quiet.mutableSet(\.tags).insert(1)
        #expect(quiet.tags == [1])
        #expect(calls.count == 0)
        token.invalidate()
    }

    @Test func setValuesYieldTheWholeSetAfterEachChange() async throws {
        let team = Team()
        var values = try team.values(for: \.members).makeAsyncIterator()
        #expect(await values.next() == ["ada", "grace"])
        team.mutableSet(\.members).insert("linus")
        #expect(await values.next() == ["ada", "grace", "linus"])
        team.mutableSet(\.members).remove("ada")
        #expect(await values.next() == ["grace", "linus"])
    }

    @Test func setMutationsCarryMembersAndPriorObserverReentrancy() throws {
        let team = AtkTeam()
        team.members = [1, 2, 3]
        let recorder = Recorder<(ChangeKind, Bool, Set<Int>?, Set<Int>?)>()
        let prior = try team.observe(\.members, options: [.prior, .old, .new]) { t, change in
            if change.isPrior && change.kind == .removal && t.members.contains(3) {
                // A prior observer empties the set before the removal happens.
                t.members = []
            }
        }
        let token = try team.observe(\.members, options: [.old, .new]) { _, change in
            recorder.add((change.kind, change.isPrior, change.oldValue, change.newValue))
        }
        team.mutableSet(\.members).remove(3)
        let last = recorder.all.last
        #expect(last?.0 == .removal)
        #expect(last?.2 == [])  // nothing was left to remove
        #expect(team.members == [])
        _ = prior.invalidate()
        team.mutableSet(\.members).formUnion([4, 5])
        #expect(recorder.all.last?.0 == .insertion)
        #expect(recorder.all.last?.3 == [4, 5])
        team.mutableSet(\.members).replaceAll(with: [5, 6])
        #expect(recorder.all.last?.0 == .replacement)
        #expect(recorder.all.last?.2 == [4])
        #expect(recorder.all.last?.3 == [6])
        try team.mutableSetValue(forKey: "members", of: Int.self).formIntersection([6])
        #expect(team.members == [6])
        #expect(throws: KVOError.self) { _ = try team.mutableSetValue(forKey: "members", of: String.self) }
        #expect(throws: KVOError.self) { _ = try team.mutableSetValue(forKey: "list", of: Int.self) }
        _ = token.invalidate()
    }

    @Test func setValuesYieldWholeSets() async throws {
        let team = AtkTeam()
        let stream = try team.values(for: \.members, bufferingPolicy: .unbounded)
        team.mutableSet(\.members).insert(1)
        team.mutableSet(\.members).insert(2)
        team.mutableSet(\.members).remove(1)
        var seen: [Set<Int>] = []
        for await v in stream {
            seen.append(v)
            if seen.count == 4 { break }
        }
        #expect(seen == [[], [1], [1, 2], [2]])
    }

    @Test func concurrentSetMutatorsExactlyOnce() throws {
        let team = AtkTeam()
        let delivered = Atomic<Int>(0)
        let token = try team.observe(\.members) { _, _ in delivered.add(1, ordering: .relaxed) }
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for j in 0..<500 {
                lock.lock()  // values are not atomic; notifications are what is counted
                team.mutableSet(\.members).insert(i * 1000 + j)
                lock.unlock()
            }
        }
        #expect(delivered.load(ordering: .relaxed) == 2000)
        #expect(team.members.count == 2000)
        _ = token.invalidate()
    }
}

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

@Suite struct ObservedSetTests {
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
}

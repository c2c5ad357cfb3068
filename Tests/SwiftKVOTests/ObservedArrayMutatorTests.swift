import Testing
@testable import SwiftKVO

// An `@ObservedArray` mutator whose prior observers change the array before it
// acts (callbacks may change values, SPEC §2.6): the mutator checks its indexes
// again after the prior notifications, never traps, and always closes the
// will/did pair it opened (issue #19 item 3).

/// An `@ObservedArray` with a dependent key, so that a dependent key's prior
/// observer can change the array too.
private final class Queue: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["items": \Queue.items] }
    @ObservedArray var items: [String]
    var size: Int { items.count }

    init(_ items: [String]) { self.items = items }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Queue.size: [\Queue.items]]
    }
}

/// One line per notification: `[prior ]kind indexes old→new`.
private func line(_ change: ObservedChange<[String]>) -> String {
    let values = "\(change.oldValue.map { "\($0)" } ?? "-")→\(change.newValue.map { "\($0)" } ?? "-")"
    return "\(change.isPrior ? "prior " : "")\(change.kind) \(change.indexes) \(values)"
}

/// Observes `items` with `.prior`; on the first prior notification of a
/// collection change, `react` changes the array.
private func observeReacting(
    _ queue: Queue, log: Log<String>, _ react: @escaping @Sendable (Queue) -> Void
) throws -> ObservationToken {
    try queue.observe(\.items, options: [.prior, .old, .new]) { queue, change in
        log.append(line(change))
        if change.isPrior, change.kind != .setting { react(queue) }
    }
}

@Suite(.needsLayout("its registrations")) struct ObservedArrayMutatorTests {
    /// Before: "Fatal error: Index out of range" in `remove(at:)`.
    @Test func removeAfterAPriorObserverEmptiedTheArrayIsANoOpThatClosesThePair() throws {
        let queue = Queue(["a", "b", "c"])
        let log = Log<String>()
        let token = try observeReacting(queue, log: log) { $0.items = [] }
        #expect(queue.mutableArray(\.items).remove(at: 2) == nil)
        #expect(queue.items == [])
        #expect(
            log.values == [
                "prior removal [2] [\"c\"]→-",
                "prior setting [] [\"a\", \"b\", \"c\"]→-",
                "setting [] [\"a\", \"b\", \"c\"]→[]",
                // The pair the mutator opened, closed: nothing removed, the array as it is.
                "setting [] []→[]",
            ])
        token.invalidate()
    }

    /// Before: "Fatal error: Array index is out of range" in `insert(_:at:)`.
    @Test func insertAfterAPriorObserverEmptiedTheArrayIsANoOpThatClosesThePair() throws {
        let queue = Queue(["a", "b", "c"])
        let log = Log<String>()
        let token = try observeReacting(queue, log: log) { $0.items = [] }
        #expect(!queue.mutableArray(\.items).insert("x", at: 3))
        #expect(queue.items == [])
        #expect(log.values.first == "prior insertion [3] -→-")
        #expect(log.values.last == "setting [] []→[]")
        #expect(log.count == 4)
        token.invalidate()
    }

    /// Before: "Fatal error: Index out of range" in `replace(at:with:)`.
    @Test func replaceAfterAPriorObserverEmptiedTheArrayIsANoOpThatClosesThePair() throws {
        let queue = Queue(["a", "b", "c"])
        let log = Log<String>()
        let token = try observeReacting(queue, log: log) { $0.items = [] }
        #expect(!queue.mutableArray(\.items).replace(at: 1, with: "x"))
        #expect(queue.items == [])
        #expect(log.values.first == "prior replacement [1] [\"b\"]→-")
        #expect(log.values.last == "setting [] []→[]")
        #expect(log.count == 4)
        token.invalidate()
    }

    /// Before: "Fatal error: Index out of range" in `remove(at:)` of several indexes.
    @Test func removeOfSeveralIndexesAfterAPriorObserverShortenedTheArrayIsANoOp() throws {
        let queue = Queue(["a", "b", "c", "d"])
        let log = Log<String>()
        let token = try observeReacting(queue, log: log) { $0.items = ["z"] }
        #expect(!queue.mutableArray(\.items).remove(at: [0, 3]))
        #expect(queue.items == ["z"])
        #expect(log.values.last == "setting [] [\"z\"]→[\"z\"]")
        token.invalidate()
    }

    /// An index still in range after the prior notifications: the mutation
    /// acts on the array as it is then, and the change says what it did.
    /// Before: the did-change carried the element announced in the prior
    /// notification (`["c"]`), not the one removed (`["y"]`).
    @Test func removeAfterAPriorObserverReplacedTheArrayRemovesWhatIsThereAndSaysSo() throws {
        let queue = Queue(["a", "b", "c"])
        let log = Log<String>()
        let token = try observeReacting(queue, log: log) { $0.items = ["w", "x", "y", "z"] }
        #expect(queue.mutableArray(\.items).remove(at: 2) == "y")
        #expect(queue.items == ["w", "x", "z"])
        #expect(log.values.first == "prior removal [2] [\"c\"]→-")
        #expect(log.values.last == "removal [2] [\"y\"]→-")
        token.invalidate()
    }

    /// A dependent key's prior observer runs before the mutation even when
    /// nobody observes the array itself. Before: "Fatal error: Index out of range".
    @Test func removeAfterADependentKeysPriorObserverEmptiedTheArrayIsANoOp() throws {
        let queue = Queue(["a", "b", "c"])
        let sizes = Log<String>()  // -1: no value
        let reacted = Counter()
        let token = try queue.observe(\.size, options: [.prior, .old, .new]) { queue, change in
            sizes.append("\(change.isPrior ? "prior " : "")\(change.oldValue ?? -1)→\(change.newValue ?? -1)")
            guard change.isPrior, reacted.count == 0 else { return }
            reacted.increment()
            queue.items = []
        }
        #expect(queue.mutableArray(\.items).remove(at: 2) == nil)
        #expect(queue.items == [])
        // The nested assignment's pair, then the mutator's, closed with the size as it is.
        #expect(sizes.values == ["prior 3→-1", "prior 3→-1", "3→0", "3→0"])
        token.invalidate()
    }

    /// Nothing out of range: the usual announcements, unchanged.
    @Test func mutationsWithoutInterferenceAnnounceAsBefore() throws {
        let queue = Queue(["a", "b"])
        let log = Log<String>()
        let token = try queue.observe(\.items, options: [.prior, .old, .new]) { _, change in
            log.append(line(change))
        }
        let mutator = queue.mutableArray(\.items)
        #expect(mutator.insert("c", at: 2))
        #expect(mutator.replace(at: 0, with: "A"))
        #expect(mutator.remove(at: 1) == "b")
        #expect(mutator.remove(at: 5) == nil)
        #expect(queue.items == ["A", "c"])
        #expect(
            log.values == [
                "prior insertion [2] -→-", "insertion [2] -→[\"c\"]",
                "prior replacement [0] [\"a\"]→-", "replacement [0] [\"a\"]→[\"A\"]",
                "prior removal [1] [\"b\"]→-", "removal [1] [\"b\"]→-",
            ])
        token.invalidate()
    }

    @Test func arrayPriorObserverEmptiesArrayThenMutatorsNoTrap() throws {
        let team = AtkTeam()
        team.list = [1, 2, 3]
        let token = try team.observe(\.list, options: [.prior]) { t, change in
            if change.isPrior && !t.list.isEmpty { t.list = [] }
        }
        #expect(team.mutableArray(\.list).remove(at: 2) == nil)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).replace(at: 2, with: 9) == false)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).insert(7, at: 3) == false)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).remove(at: [0, 2]) == false)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).removeLast() == nil)
        _ = token.invalidate()
    }
}

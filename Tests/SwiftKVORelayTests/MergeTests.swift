#if Relay
import Foundation
import SwiftKVO
import Testing

@testable import SwiftKVORelay

/// An inventory as a service keeps it: counts per SKU, tags, a price, a
/// custom-merged set of seen regions, all under the service's own lock.
final class Stock: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["counts": \Stock.counts, "labels": \Stock.labels, "tags": \Stock.tags, "badges": \Stock.badges, "visits": \Stock.visits, "regions": \Stock.regions] }
    private let lock = NSLock()
    /// The thread holding `lock`: written only by it, under it.
    private var owner: pthread_t?
    @Observed var counts: [String: Int] = [:]
    @Observed var labels: [String: String] = [:]
    @Observed var tags: Set<String> = []
    @ObservedSet var badges: Set<String> = []
    @Observed var visits = 0
    @Observed var regions = Regions()

    /// Replicates every property, remote writes under `lock`.
    static func replicate(_ stock: Stock, on relay: Relay) throws {
        let isolation = ReplicationIsolation.lock { apply in stock.locked { _ in apply() } }
        try relay.replicate(\.counts, of: stock, as: "stock.counts", merging: .counterPerKey(), isolation: isolation)
        try relay.replicate(\.labels, of: stock, as: "stock.labels", merging: .perKey(), isolation: isolation)
        try relay.replicate(\.tags, of: stock, as: "stock.tags", merging: .perMember(), isolation: isolation)
        try relay.replicate(\.badges, of: stock, as: "stock.badges", merging: .perMember(), isolation: isolation)
        try relay.replicate(\.visits, of: stock, as: "stock.visits", merging: .counter, isolation: isolation)
        try relay.replicate(\.regions, of: stock, as: "stock.regions", merging: .merging, isolation: isolation)
    }

    func locked<T>(_ body: (Stock) -> T) -> T {
        lock.withLock {
            owner = pthread_self()
            defer { owner = nil }
            return body(self)
        }
    }

    /// Whether this thread holds the lock (asked while it does, so the read
    /// is ordered; asked while another thread does, ThreadSanitizer says so).
    var isLockedByThisThread: Bool { owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
}

/// A grow-only set: its merge is the union.
struct Regions: ReplicatedMergeable {
    var names: Set<String> = []

    func merged(with other: Regions) -> Regions { Regions(names: names.union(other.names)) }
}

/// Issue #32, item 1: concurrent writers on several instances, merged per
/// key, per member, per writer, or by the type's own merge: no write lost.
extension RelayTests {
    @Test func concurrentIncrementsOfOneKeyOnThreeInstancesAddUp() async throws {
        let channel = try TestServer.freshChannel("mergecount")
        let stocks = [Stock(), Stock(), Stock()]
        var relays: [RunningRelay] = []
        for stock in stocks {
            relays.append(try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stock, on: $0) }))
        }
        let increments = 300
        await withTaskGroup(of: Void.self) { group in
            for (index, stock) in stocks.enumerated() {
                group.addTask {
                    for step in 0..<increments {
                        stock.locked { stock in
                            stock.counts["shared", default: 0] += 1
                            stock.counts["own\(index)", default: 0] += 1
                            stock.visits += 1
                            if step % 3 == 0 { stock.counts["shared", default: 0] -= 1 }
                        }
                        if step % 50 == 0 { await Task.yield() }
                    }
                }
            }
        }
        var expected = ["shared": 3 * (increments - increments / 3)]
        for index in stocks.indices { expected["own\(index)"] = increments }
        for (index, stock) in stocks.enumerated() {
            try await eventually("instance \(index)'s counts", deadline: .seconds(60)) {
                stock.locked { $0.counts == expected && $0.visits == 3 * increments }
            }
        }
        // A new instance loads the same from the table.
        let late = Stock()
        let d = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(late, on: $0) })
        #expect(late.locked { $0.counts } == expected)
        #expect(late.locked { $0.visits } == 3 * increments)
        await d.stop()
        for relay in relays { await relay.stop() }
    }

    @Test func writesOfDifferentKeysMembersAndRegionsOnTwoInstancesAllSurvive() async throws {
        let channel = try TestServer.freshChannel("mergekeys")
        let (stockA, stockB) = (Stock(), Stock())
        let a = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stockA, on: $0) })
        let b = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stockB, on: $0) })
        await withTaskGroup(of: Void.self) { group in
            for (side, stock) in [("a", stockA), ("b", stockB)] {
                group.addTask {
                    for step in 0..<100 {
                        stock.locked { stock in
                            stock.labels["\(side)\(step)"] = "\(side)-\(step)"
                            stock.tags.insert("\(side)\(step)")
                            if step % 10 == 9 {
                                stock.labels["\(side)\(step - 1)"] = nil
                                stock.tags.remove("\(side)\(step - 1)")
                            }
                            stock.regions.names.insert("\(side)\(step % 7)")
                        }
                        if step % 20 == 0 { await Task.yield() }
                    }
                }
            }
        }
        var labels: [String: String] = [:]
        var tags: Set<String> = []
        for side in ["a", "b"] {
            for step in 0..<100 where step % 10 != 8 {
                labels["\(side)\(step)"] = "\(side)-\(step)"
                tags.insert("\(side)\(step)")
            }
        }
        let regions = Set(["a", "b"].flatMap { side in (0..<7).map { "\(side)\($0)" } })
        for (label, stock) in [("a", stockA), ("b", stockB)] {
            try await eventually("\(label) converged", deadline: .seconds(60)) {
                stock.locked { $0.labels == labels && $0.tags == tags && $0.regions.names == regions }
            }
        }
        await a.stop()
        await b.stop()
    }

    /// Issue #32, item 2: an instance started while the database is down
    /// writes; once it is up, its write merges with what was stored, and
    /// nothing stored is lost.
    @Test func aColdStartedInstanceMergesItsEarlyWritesAndWipesNothing() async throws {
        let channel = try TestServer.freshChannel("mergecold")
        let first = Stock()
        let a = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(first, on: $0) })
        first.locked { stock in
            stock.counts = ["x": 5, "y": 3]
            stock.labels = ["kept": "yes"]
            stock.tags = ["kept"]
        }
        try await eventually("a's writes committed") { a.relay.statistics.sent == 4 }
        await a.stop()

        try TestServer.runCommand("RELAY_PG_STOP")
        let early = Stock()
        let starting = try await RunningRelay(
            channel: channel, waitsUntilListening: false, prepare: { try Stock.replicate(early, on: $0) })
        try await Task.sleep(for: .milliseconds(300))
        #expect(!starting.relay.isReady)
        early.locked { stock in
            stock.counts["early", default: 0] += 1
            stock.counts["x", default: 0] += 1
            stock.labels["early"] = "too"
            stock.tags.insert("early")
        }
        try TestServer.runCommand("RELAY_PG_START")
        try await within(.seconds(30)) { try await starting.relay.waitUntilReady() }
        let counts = ["x": 6, "y": 3, "early": 1]
        try await eventually("the early writes merged", deadline: .seconds(30)) {
            early.locked { $0.counts == counts && $0.labels == ["kept": "yes", "early": "too"] && $0.tags == ["kept", "early"] }
        }
        // Two counters' entries ("early", "x"), a label, a tag.
        try await eventually("the early writes committed") { starting.relay.statistics.sent == 4 }
        let later = Stock()
        let c = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(later, on: $0) })
        #expect(later.locked { $0.counts } == counts)
        #expect(later.locked { $0.labels } == ["kept": "yes", "early": "too"])
        #expect(later.locked { $0.tags } == ["kept", "early"])
        await c.stop()
        await starting.stop()
    }

    /// Issue #32, item 3: remote writes and loads run under the service's
    /// lock; the observers of a remote change see it held.
    @Test func remoteWritesAndLoadsRunUnderTheServicesLock() async throws {
        let channel = try TestServer.freshChannel("mergelock")
        let (stockA, stockB) = (Stock(), Stock())
        let unlocked = LockedState(0)
        let seen = LockedState(0)
        let token = try stockB.observe(\.counts) { stock, _ in
            seen.withLock { $0 += 1 }
            if !stock.isLockedByThisThread { unlocked.withLock { $0 += 1 } }
        }
        let a = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stockA, on: $0) })
        stockA.locked { $0.counts["x", default: 0] += 1 }
        try await eventually("a's write committed") { a.relay.statistics.sent == 1 }
        let b = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stockB, on: $0) })
        for _ in 0..<50 { stockA.locked { $0.counts["x", default: 0] += 1 } }
        try await eventually("a's writes at b") { stockB.locked { $0.counts["x"] } == 51 }
        token.invalidate()
        #expect(seen.withLock { $0 } >= 2)
        #expect(unlocked.withLock { $0 } == 0)
        await a.stop()
        await b.stop()
    }

    /// Issue #32, item 3: with an actor's isolation, remote writes and loads
    /// run on the actor (its `preconditionIsolated` holds in the observers).
    @Test func remoteWritesAndLoadsRunOnTheServicesActor() async throws {
        let channel = try TestServer.freshChannel("mergeactor")
        let store = PriceStore()
        let checked = LockedState(0)
        let latest = LockedState(0)
        let token = try store.model.observe(\.price, options: .new) { _, change in
            store.preconditionIsolated()
            checked.withLock { $0 += 1 }
            latest.withLock { $0 = change.newValue ?? 0 }
        }
        let writer = Flagged()
        let a = try await RunningRelay(channel: channel, prepare: { try $0.replicate(\.price, of: writer, as: "store.price") })
        writer.price = 1
        try await eventually("a's write committed") { a.relay.statistics.sent == 1 }
        let b = try await RunningRelay(
            channel: channel,
            prepare: { try $0.replicate(\.price, of: store.model, as: "store.price", isolation: .actor(store)) })
        for value in 2...20 { writer.price = value }
        try await eventually("a's writes on the actor") { latest.withLock { $0 } == 20 }
        #expect(await store.price() == 20)
        token.invalidate()
        #expect(checked.withLock { $0 } >= 2)
        await a.stop()
        await b.stop()
    }

    /// A counter's entries belong to a writer's incarnation: an instance
    /// restarted under the same id starts a new one, and what it counted
    /// before stays counted once.
    @Test func aCounterRestartedUnderTheSameIDKeepsWhatItCountedBefore() async throws {
        let channel = try TestServer.freshChannel("mergefixed")
        let watcher = Stock()
        let b = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(watcher, on: $0) })
        let first = Stock()
        let a = try await RunningRelay(
            channel: channel, instanceID: "fixed", prepare: { try Stock.replicate(first, on: $0) })
        first.locked { stock in
            stock.counts["x", default: 0] += 10
            stock.visits += 10
        }
        try await eventually("the first life's counts at b") { watcher.locked { $0.counts["x"] == 10 && $0.visits == 10 } }
        await a.stop()
        let second = Stock()
        let again = try await RunningRelay(
            channel: channel, instanceID: "fixed", prepare: { try Stock.replicate(second, on: $0) })
        #expect(second.locked { $0.counts["x"] } == 10)
        second.locked { stock in
            stock.counts["x", default: 0] += 5
            stock.visits -= 3
        }
        try await eventually("the second life's counts at b") { watcher.locked { $0.counts["x"] == 15 && $0.visits == 7 } }
        let late = Stock()
        let c = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(late, on: $0) })
        #expect(late.locked { ($0.counts, $0.visits) } == (["x": 15], 7))
        for relay in [b, again, c] { await relay.stop() }
    }

    /// Members inserted and removed through the set's mutable proxy are
    /// replicated like assignments.
    @Test func setMembersChangedThroughTheMutableProxyAreReplicated() async throws {
        let channel = try TestServer.freshChannel("mergeproxy")
        let (stockA, stockB) = (Stock(), Stock())
        let a = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stockA, on: $0) })
        let b = try await RunningRelay(channel: channel, prepare: { try Stock.replicate(stockB, on: $0) })
        stockA.locked { stock in
            let badges = stock.mutableSet(\.badges)
            badges.insert("gold")
            badges.formUnion(["silver", "bronze"])
            badges.remove("silver")
        }
        try await eventually("a's badges at b") { stockB.locked { $0.badges } == ["gold", "bronze"] }
        await a.stop()
        await b.stop()
    }

    /// Entries are read as their policy spells them, from the writer that
    /// owns them; anything else is dropped and counted, and changes nothing.
    @Test func entriesNotSpelledAsSentOrOwnedByAnotherWriterAreDropped() throws {
        var configuration = RelayConfiguration(
            postgres: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: nil, tls: .disable),
            logger: TestServer.quietLogger)
        configuration.stateTable = nil
        let relay = try Relay(configuration: configuration)
        let stock = Stock()
        try Stock.replicate(stock, on: relay)
        var sequence: UInt64 = 0
        func set(_ name: String, entry: String, _ value: String, from instance: String = "other") {
            sequence += 1
            let stamp = UInt64(Date().timeIntervalSince1970 * 1_000_000)
            var message = #"{"o":"\#(instance)","i":7,"s":\#(sequence),"v":1,"t":"set","n":"\#(name)","e":"#
            Wire.appendQuoted(entry, to: &message)
            message += #","c":\#(stamp),"x":\#(value)}"#
            #expect(relay.receive(message) == nil)
        }
        set("stock.counts", entry: #"["other",7,"x"]"#, "[3,0]")
        set("stock.labels", entry: #""k""#, #"["v"]"#)
        #expect(stock.locked { ($0.counts, $0.labels) } == (["x": 3], ["k": "v"]))
        let dropped = relay.statistics.droppedWrongType
        set("stock.counts", entry: #"["victim",7,"x"]"#, "[99,0]")  // another writer's entry
        set("stock.counts", entry: #"["other",8,"x"]"#, "[99,0]")  // another incarnation's
        set("stock.counts", entry: #"[ "other",7,"x"]"#, "[99,0]")  // spelled otherwise
        set("stock.visits", entry: #"["other",7,"x"]"#, "[99,0]")  // a key where none is
        set("stock.labels", entry: "\"e\u{301}\"", #"["nfd"]"#)  // not in normal form C
        set("stock.labels", entry: #"k"#, #"["bare"]"#)  // not JSON
        set("stock.labels", entry: #""k""#, #"["v","w"]"#)  // two elements
        #expect(relay.statistics.droppedWrongType == dropped + 7)
        #expect(stock.locked { ($0.counts, $0.labels, $0.visits) } == (["x": 3], ["k": "v"], 0))
        set("stock.labels", entry: #""k""#, "[]")
        #expect(stock.locked { $0.labels }.isEmpty)
    }

    /// Issue #32, item 1: one dictionary entry cannot be replicated by key
    /// path; the error names what to use instead.
    @Test func replicatingOneDictionaryEntrySaysWhatToUseInstead() throws {
        let relay = try Relay(
            configuration: RelayConfiguration(
                postgres: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: nil, tls: .disable)))
        let stock = Stock()
        #expect {
            try relay.replicate(\.counts["x"], of: stock, as: "stock.x")
        } throws: { error in
            "\(error)".contains("merging: .perKey(), .counterPerKey() or .perMember()")
        }
        #expect(relay.stopReplicating("stock.x") == false)
    }
}

/// A model only touched by its actor.
actor PriceStore {
    nonisolated let model = Flagged()

    func price() -> Int { model.price }
}

final class Flagged: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["price": \Flagged.price] }
    @Observed var price = 0
}
#endif

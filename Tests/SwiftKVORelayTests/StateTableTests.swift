#if Relay
import Foundation
import Logging
import PostgresNIO
import SwiftKVO
import Testing

@testable import SwiftKVORelay

/// Four replicated integers. Tests assign them from the test's task while
/// the relay assigns remote values from its own (word-sized stores).
final class Settings: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \Settings.a, "b": \Settings.b, "c": \Settings.c, "d": \Settings.d] }
    @Observed var a = 0
    @Observed var b = 0
    @Observed var c = 0
    @Observed var d = 0

    static var replicated: [(name: String, keyPath: ReferenceWritableKeyPath<Settings, Int>)] {
        [("cfg.a", \.a), ("cfg.b", \.b), ("cfg.c", \.c), ("cfg.d", \.d)]
    }

    /// Replicates every property of `settings` through `relay`.
    static func replicate(_ settings: Settings, on relay: Relay) throws {
        for (name, keyPath) in replicated { try relay.replicate(keyPath, of: settings, as: name) }
    }

    var values: [Int] { Self.replicated.map { self[keyPath: $0.keyPath] } }
}

/// Issue #23, item 4: replicated properties kept in a state table, so that
/// they converge by themselves.
extension RelayTests {
    /// The rows of `channel` in the default state table: name → (instance, message).
    static func stateRows(_ channel: RelayChannel) async throws -> [String: (instance: String, message: String)] {
        var rows: [String: (instance: String, message: String)] = [:]
        try await withRawConnection { connection in
            let result = try await connection.query(
                "SELECT name, instance, message FROM swiftkvo_relay_state WHERE channel = \(channel.name)",
                logger: TestServer.quietLogger)
            for try await (name, instance, message) in result.decode((String, String, String).self) {
                rows[name] = (instance, message)
            }
        }
        return rows
    }

    /// The `x` member of a stored message (the value), as JSON text.
    static func storedValue(_ message: String) -> String? {
        guard let range = message.range(of: #","x":"#) else { return nil }
        let rest = message[range.upperBound...]
        let end = rest.firstIndex { $0 == "," || $0 == "}" } ?? rest.endIndex
        return String(rest[..<end])
    }

    @Test func aNewInstanceGetsTheCurrentValuesAtStartWithoutSendingThemAgain() async throws {
        let channel = try TestServer.freshChannel("statestart")
        let flagsA = Flags()
        let flagsB = Flags()
        let replicate = { (flags: Flags) in
            { (relay: Relay) throws in
                try relay.replicate(\.checkout, of: flags, as: "flags.checkout")
                try relay.replicate(\.banner, of: flags, as: "flags.banner")
                try relay.bridge(.testMarker)
            }
        }
        let a = try await RunningRelay(channel: channel, prepare: replicate(flagsA))
        let b = try await RunningRelay(channel: channel, prepare: replicate(flagsB))
        flagsA.checkout = true
        flagsA.banner = "hello"
        try await eventually("a's writes at b") { flagsB.checkout && flagsB.banner == "hello" }
        try await eventually("a's statements committed") { a.relay.statistics.sent == 2 }

        // A third instance, started later, with an observer registered before it runs.
        let flagsC = Flags()
        let seenAtC = LockedState<[Bool]>([])
        let token = try flagsC.observe(\.checkout, options: .new) { _, change in
            seenAtC.withLock { $0.append(change.newValue!) }
        }
        let c = try await RunningRelay(channel: channel, prepare: replicate(flagsC))
        // RunningRelay returns once c is listening, which includes its first load.
        #expect(flagsC.checkout)
        #expect(flagsC.banner == "hello")
        #expect(seenAtC.withLock { $0 } == [true])
        #expect(c.relay.statistics.stateLoads == 1)
        #expect(c.relay.statistics.stateValuesApplied == 2)
        #expect(c.relay.statistics.dropped == 0)

        // Nothing was sent again: c's marker is the first message a gets from c.
        let markersAtA = Inbox(.testMarker, from: a.relay)
        try c.relay.post(name: .testMarker)
        try await eventually("c's marker at a") { markersAtA.count == 1 }
        #expect(a.relay.statistics.delivered == 1)
        try await eventually("c's statement completed") { c.relay.statistics.sent >= 1 }
        #expect(c.relay.statistics.sent == 1)

        // What psql shows: one row per replicated name, the last writer's message.
        let rows = try await Self.stateRows(channel)
        print("state table rows of \(channel.name): \(rows)")
        #expect(rows.count == 2)
        #expect(rows["flags.checkout"]?.instance == a.relay.instanceID)
        #expect(rows["flags.checkout"].flatMap { Self.storedValue($0.message) } == "true")
        #expect(rows["flags.banner"].flatMap { Self.storedValue($0.message) } == #""hello""#)
        token.invalidate()
        await a.stop()
        await b.stop()
        await c.stop()
    }

    /// Two instances write every name while `interrupt` cuts them off; once
    /// both are back, they, the table and a third instance started afterwards
    /// hold the same value for every name. `reconnectDelayB`: b's first delay
    /// before reconnecting (a's is 50 ms).
    func converge(
        _ label: String, writes: Int, reconnectDelayB: Duration = .milliseconds(50),
        interrupt: @escaping @Sendable () async throws -> Void
    ) async throws {
        let channel = try TestServer.freshChannel(label)
        let settingsA = Settings()
        let settingsB = Settings()
        let a = try await RunningRelay(
            channel: channel, applicationName: "relay-converge-a", prepare: { try Settings.replicate(settingsA, on: $0) })
        let b = try await RunningRelay(
            channel: channel, applicationName: "relay-converge-b", reconnectDelay: reconnectDelayB,
            prepare: { try Settings.replicate(settingsB, on: $0) })
        let resyncsAtB = Inbox(Relay.resynchronize, from: b.relay)

        // Each side writes `writes` values, a odd numbers and b even ones,
        // round the names, a few milliseconds apart.
        func writer(_ settings: Settings, first: Int) -> Task<Void, any Error> {
            Task {
                for n in 0..<writes {
                    settings[keyPath: Settings.replicated[n % 4].keyPath] = first + 2 * n
                    try await Task.sleep(for: .milliseconds(3))
                }
            }
        }
        let writerA = writer(settingsA, first: 1)
        let writerB = writer(settingsB, first: 2)
        try await eventually("the writes under way") { settingsB.values.contains { $0 % 2 == 1 } }
        try await interrupt()
        try await writerA.value
        try await writerB.value
        try await eventually("both relays reconnected") { a.reconnected && b.reconnected }
        do {
            try await eventually("every name the same at a and at b", deadline: .seconds(120)) {
                settingsA.values == settingsB.values
            }
        } catch {
            let table = try await Self.stateRows(channel)
            print(
                "not converged (\(label)): a=\(settingsA.values) b=\(settingsB.values) table=\(table)",
                "a: \(a.relay.statistics) listening \(a.relay.isListening)",
                "b: \(b.relay.statistics) listening \(b.relay.isListening)")
            throw error
        }
        let table = try await Self.stateRows(channel)
        let tableValues = Settings.replicated.map { table[$0.name].flatMap { Self.storedValue($0.message) }.flatMap { Int($0) } }
        let settingsC = Settings()
        let c = try await RunningRelay(
            channel: channel, applicationName: "relay-converge-c", prepare: { try Settings.replicate(settingsC, on: $0) })
        let statisticsA = a.relay.statistics
        let statisticsB = b.relay.statistics
        print(
            "converge (\(label)): \(writes) writes on each side; values a=\(settingsA.values) b=\(settingsB.values)",
            "table=\(tableValues) c=\(settingsC.values); disconnects a=\(statisticsA.disconnects)",
            "b=\(statisticsB.disconnects); loads a=\(statisticsA.stateLoads) b=\(statisticsB.stateLoads);",
            "values applied from the table a=\(statisticsA.stateValuesApplied) b=\(statisticsB.stateValuesApplied);",
            "missed at b \(statisticsB.missed); resynchronize at b",
            "\(resyncsAtB.all.map { "\($0.userInfo["reason"] ?? "?") \($0.userInfo["updated"] ?? "?")" })")
        #expect(settingsA.values == settingsB.values)
        #expect(tableValues == settingsA.values.map { Optional($0) })
        #expect(settingsC.values == settingsA.values)
        #expect(statisticsA.disconnects >= 1)
        #expect(statisticsB.disconnects >= 1)
        #expect(resyncsAtB.all.contains { $0.userInfo["reason"] as? String == "reconnected" })
        #expect(statisticsA.dropped == statisticsA.droppedStale + statisticsA.droppedDuplicate)
        #expect(statisticsB.dropped == statisticsB.droppedStale + statisticsB.droppedDuplicate)
        await a.stop()
        await b.stop()
        await c.stop()
    }

    @Test func writesOnBothSidesAcrossAServerRestartConvergeOnEveryInstance() async throws {
        try await converge("restart", writes: 400) {
            try TestServer.runCommand("RELAY_PG_STOP")
            try TestServer.runCommand("RELAY_PG_START")
        }
    }

    @Test func writesOnBothSidesDuringAServerOutageConvergeOnEveryInstance() async throws {
        // The last writes of both sides wait in their queues; a reconnects
        // first and sends its own while b is not listening yet: b learns
        // them from the table.
        try await converge("outage", writes: 400, reconnectDelayB: .milliseconds(1500)) {
            try TestServer.runCommand("RELAY_PG_STOP")
            try await Task.sleep(for: .seconds(2))
            try TestServer.runCommand("RELAY_PG_START")
        }
    }

    @Test func writesOnBothSidesAcrossTerminatedSessionsConvergeOnEveryInstance() async throws {
        try await converge("terminate", writes: 400) {
            for _ in 0..<3 {
                try await terminateBackends(of: "relay-converge-a")
                try await terminateBackends(of: "relay-converge-b")
                try await Task.sleep(for: .milliseconds(150))
            }
        }
    }

    @Test func aResynchronizationSaysWhichPropertiesTheLoadBroughtUpToDate() async throws {
        let channel = try TestServer.freshChannel("stateresync")
        let settingsA = Settings()
        let settingsB = Settings()
        let a = try await RunningRelay(channel: channel, prepare: { try Settings.replicate(settingsA, on: $0) })
        // b waits a second or two before reconnecting: a writes meanwhile.
        let b = try await RunningRelay(
            channel: channel, applicationName: "relay-state-b", reconnectDelay: .seconds(2),
            prepare: { try Settings.replicate(settingsB, on: $0) })
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)
        try await terminateBackends(of: "relay-state-b")
        try await eventually("b cut off") { !b.relay.isListening }
        settingsA.a = 5
        settingsA.c = 6
        try await eventually("a's writes committed") { a.relay.statistics.sent == 2 }
        #expect(!b.relay.isListening)
        try await eventually("b's resynchronization") { resyncs.count == 1 }
        let note = try #require(resyncs.all.first)
        print("resynchronize at b: \(note.userInfo)")
        #expect(note.userInfo["reason"] as? String == "reconnected")
        #expect(note.userInfo["updated"] as? [String] == ["cfg.a", "cfg.c"])
        #expect(settingsB.values == [5, 0, 6, 0])
        #expect(b.relay.statistics.stateValuesApplied == 2)
        #expect(b.relay.statistics.delivered == 0)  // nothing of it came as a message
        await a.stop()
        await b.stop()
    }
}

/// Six replicated integers, for the hostile rows.
final class Targets: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["json": \Targets.json, "type": \Targets.type, "huge": \Targets.huge, "future": \Targets.future, "other": \Targets.other, "good": \Targets.good] }
    @Observed var json = 0
    @Observed var type = 0
    @Observed var huge = 0
    @Observed var future = 0
    @Observed var other = 0
    @Observed var good = 0

    static var replicated: [(name: String, keyPath: ReferenceWritableKeyPath<Targets, Int>)] {
        [
            ("t.json", \.json), ("t.type", \.type), ("t.huge", \.huge), ("t.future", \.future),
            ("t.other", \.other), ("t.good", \.good),
        ]
    }

    static func replicate(_ targets: Targets, on relay: Relay) throws {
        for (name, keyPath) in replicated { try relay.replicate(keyPath, of: targets, as: name) }
    }
}

// Issue #22's hostility, for the state table: any client of the database can
// write rows in it, and a row is read with the same suspicion as a message.
extension RelayTests {
    /// Inserts (or replaces) a row of `channel` in the default state table.
    static func insertStateRow(
        _ channel: RelayChannel, name: String, stamp: Int64, instance: String, message: String
    ) async throws {
        try await withRawConnection { connection in
            _ = try await connection.query(
                """
                INSERT INTO swiftkvo_relay_state (channel, name, stamp, instance, message) \
                VALUES (\(channel.name), \(name), \(stamp), \(instance), \(message)) \
                ON CONFLICT (channel, name, entry) DO UPDATE SET stamp = excluded.stamp, instance = excluded.instance, \
                message = excluded.message
                """, logger: TestServer.quietLogger)
        }
    }

    /// A `set` message stored by another client, stamped now.
    static func storedSet(_ name: String, _ value: String, stamp: UInt64, instance: String = "mallory") -> String {
        #"{"o":"\#(instance)","i":1,"s":1,"v":1,"t":"set","n":"\#(name)","c":\#(stamp),"x":\#(value)}"#
    }

    @Test func hostileStateRowsAreDroppedAndCountedLikeHostileMessages() async throws {
        let channel = try TestServer.freshChannel("statehostile")
        // The first relay makes the table (if this run has not yet).
        let makerTargets = Targets()
        let maker = try await RunningRelay(channel: channel, prepare: { try Targets.replicate(makerTargets, on: $0) })
        await maker.stop()
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let hour: UInt64 = 3_600_000_000
        let rows: [(name: String, stamp: UInt64, message: String)] = [
            ("t.json", now, #"{"o":"mallory","i":1,"s":1,"v":1,"t":"set","n":"t.json","c":"# + String(now) + #","x":"#),
            ("t.type", now, Self.storedSet("t.type", #""not a number""#, stamp: now)),
            ("t.huge", now, Self.storedSet("t.huge", "\"" + String(repeating: "x", count: 100_000) + "\"", stamp: now)),
            ("t.future", now + hour, Self.storedSet("t.future", "9", stamp: now + hour)),
            ("t.other", now, Self.storedSet("t.good", "13", stamp: now)),  // another name's row
            ("t.good", now, Self.storedSet("t.good", "42", stamp: now)),
        ]
        for row in rows {
            try await Self.insertStateRow(
                channel, name: row.name, stamp: Int64(row.stamp), instance: "mallory", message: row.message)
        }

        let targets = Targets()
        let b = try await RunningRelay(channel: channel, prepare: { try Targets.replicate(targets, on: $0) })
        let statistics = b.relay.statistics
        print("hostile rows: statistics \(statistics)")
        let untouched: [Int] = [targets.json, targets.type, targets.huge, targets.future, targets.other]
        #expect(untouched == [0, 0, 0, 0, 0])
        #expect(targets.good == 42)
        #expect(statistics.stateValuesApplied == 1)
        #expect(statistics.droppedMalformed == 2)  // not JSON; another name's message
        #expect(statistics.droppedWrongType == 1)
        #expect(statistics.droppedOversized == 1)
        #expect(statistics.droppedFutureStamp == 1)
        #expect(statistics.dropped == 5)

        // The relay goes on: its next write replaces the future-stamped row it refused.
        targets.future = 1
        try await eventually("b's write committed") { b.relay.statistics.sent == 1 }
        let table = try await Self.stateRows(channel)
        #expect(table["t.future"].flatMap { Self.storedValue($0.message) } == "1")
        #expect(table["t.future"]?.instance == b.relay.instanceID)
        await b.stop()
    }

    @Test func withSigningOnlyRowsSignedWithAnAcceptedKeyAreApplied() async throws {
        let channel = try TestServer.freshChannel("statesigned")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let settingsA = Settings()
        let a = try await RunningRelay(
            channel: channel, configure: { $0.signing = signing }, prepare: { try Settings.replicate(settingsA, on: $0) })
        settingsA.a = 7
        try await eventually("a's write committed") { a.relay.statistics.sent == 1 }
        await a.stop()
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let unsigned = Self.storedSet("cfg.b", "66", stamp: now)
        let wrongKey = RelaySigning(current: try Self.signingKey("k1", 2)).sign(
            Self.storedSet("cfg.c", "67", stamp: now), channel: channel)
        try await Self.insertStateRow(channel, name: "cfg.b", stamp: Int64(now), instance: "mallory", message: unsigned)
        try await Self.insertStateRow(channel, name: "cfg.c", stamp: Int64(now), instance: "mallory", message: wrongKey)
        // a's row is older than the loading relay: a row is the last write,
        // however old, so its send time is not held against it.
        try await Task.sleep(for: .milliseconds(2100))

        let settingsB = Settings()
        let b = try await RunningRelay(
            channel: channel, configure: { $0.signing = signing }, prepare: { try Settings.replicate(settingsB, on: $0) })
        let statistics = b.relay.statistics
        print("signed rows: values \(settingsB.values), statistics \(statistics)")
        #expect(settingsB.values == [7, 0, 0, 0])
        #expect(statistics.stateValuesApplied == 1)
        #expect(statistics.droppedUnsigned == 1)
        #expect(statistics.droppedBadSignature == 1)
        #expect(statistics.dropped == 2)
        await b.stop()
    }

    /// Sets `cfg.a` to `value` through a relay signing with `key` on
    /// `channel`, and stops it once the write is committed.
    static func writeA(_ value: Int, on channel: RelayChannel, signedWith key: RelaySigningKey) async throws {
        let settings = Settings()
        let relay = try await RunningRelay(
            channel: channel, configure: { $0.signing = RelaySigning(current: key) },
            prepare: { try Settings.replicate(settings, on: $0) })
        settings.a = value
        try await eventually("the write committed") { relay.relay.statistics.sent == 1 }
        await relay.stop()
    }

    // Issue #35, item 4: the rotation the documentation describes, end to
    // end: a value written under key A is still there once A is retired.
    @Test func rotationKeepsTheState() async throws {
        let channel = try TestServer.freshChannel("staterotate")
        let keyA = try Self.signingKey("2026-10", 1)
        let keyB = try Self.signingKey("2026-11", 2)
        try await Self.writeA(7, on: channel, signedWith: keyA)
        let written = try await Self.stateRows(channel)["cfg.a"]
        #expect(written?.message.contains(#""k":"2026-10","#) == true)

        // The overlap: B current, A previous. Loading signs the row again with B.
        let settingsB = Settings()
        let b = try await RunningRelay(
            channel: channel, configure: { $0.signing = RelaySigning(current: keyB, previous: [keyA]) },
            prepare: { try Settings.replicate(settingsB, on: $0) })
        #expect(settingsB.values == [7, 0, 0, 0])
        #expect(b.relay.statistics.stateRowsResigned == 1)
        #expect(b.relay.statistics.dropped == 0)
        await b.stop()
        let resigned = try await Self.stateRows(channel)["cfg.a"]
        let row = try #require(resigned)
        #expect(row.message.contains(#""k":"2026-11","#))
        #expect(Self.storedValue(row.message) == "7")

        // A retired: an instance with B alone still loads the value.
        let settingsC = Settings()
        let c = try await RunningRelay(
            channel: channel, configure: { $0.signing = RelaySigning(current: keyB) },
            prepare: { try Settings.replicate(settingsC, on: $0) })
        print("rotation: values \(settingsC.values), statistics \(c.relay.statistics)")
        #expect(settingsC.values == [7, 0, 0, 0])
        #expect(c.relay.statistics.stateValuesApplied == 1)
        #expect(c.relay.statistics.dropped == 0)
        #expect(c.relay.statistics.stateRowsResigned == 0)
        await c.stop()
    }

    @Test func aStateRowThatNoLongerVerifiesIsAWarningAndCounted() async throws {
        let channel = try TestServer.freshChannel("stateretired")
        let keyA = try Self.signingKey("2026-10", 1)
        try await Self.writeA(7, on: channel, signedWith: keyA)
        // A retired without an overlap: the row cannot be verified.
        let recorder = LogRecorder()
        let settingsC = Settings()
        let keyB = try Self.signingKey("2026-11", 2)
        let c = try await RunningRelay(
            channel: channel, logger: recorder.logger(level: .warning),
            configure: { $0.signing = RelaySigning(current: keyB) },
            prepare: { try Settings.replicate(settingsC, on: $0) })
        #expect(settingsC.values == [0, 0, 0, 0])
        #expect(c.relay.statistics.droppedBadSignature == 1)
        let warnings = recorder.all.filter { $0.level == .warning && $0.message.contains("state-table row") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["name"]?.description == "cfg.a")
        await c.stop()
    }

    // Issue #35, item 8, for upgrades: a row signed before the channel was
    // signed is loaded while upgrading, and signed again covering it.
    @Test func aRowSignedWithoutTheChannelIsSignedAgainWhileUpgrading() async throws {
        let channel = try TestServer.freshChannel("stateupgrade")
        let key = try Self.signingKey("k1", 1)
        // The first relay makes the table (if this run has not yet).
        let makerSettings = Settings()
        let maker = try await RunningRelay(
            channel: channel, configure: { $0.signing = RelaySigning(current: key) },
            prepare: { try Settings.replicate(makerSettings, on: $0) })
        await maker.stop()
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let old = RelaySigning(current: key).signWithoutChannel(
            Self.storedSet("cfg.b", "5", stamp: now, instance: "old"))
        try await Self.insertStateRow(channel, name: "cfg.b", stamp: Int64(now), instance: "old", message: old)
        var upgrading = RelaySigning(current: key)
        upgrading.acceptsSignaturesWithoutChannel = true
        let settingsB = Settings()
        let b = try await RunningRelay(
            channel: channel, configure: { $0.signing = upgrading },
            prepare: { try Settings.replicate(settingsB, on: $0) })
        #expect(settingsB.values == [0, 5, 0, 0])
        #expect(b.relay.statistics.stateRowsResigned == 1)
        await b.stop()
        let settingsC = Settings()
        let c = try await RunningRelay(
            channel: channel, configure: { $0.signing = RelaySigning(current: key) },
            prepare: { try Settings.replicate(settingsC, on: $0) })
        #expect(settingsC.values == [0, 5, 0, 0])
        #expect(c.relay.statistics.dropped == 0)
        await c.stop()
    }

    @Test func aTableOfThatNameTheRelayDidNotCreateIsLeftAloneAndReported() async throws {
        let channel = try TestServer.freshChannel("stateforeign")
        let tableName = "foreign_\(channel.name)"
        try await executeRaw(#"CREATE TABLE "\#(tableName)" (id integer PRIMARY KEY, note text)"#)
        let table = try RelayStateTable(tableName)
        let recorder = LogRecorder()
        let flagsA = Flags()
        let flagsB = Flags()
        let a = try await RunningRelay(
            channel: channel, logger: recorder.logger(level: .info), configure: { $0.stateTable = table },
            prepare: { try $0.replicate(\.checkout, of: flagsA, as: "flags.checkout") })
        let b = try await RunningRelay(
            channel: channel, configure: { $0.stateTable = table },
            prepare: { try $0.replicate(\.checkout, of: flagsB, as: "flags.checkout") })
        // Notifications still flow.
        flagsA.checkout = true
        try await eventually("a's write at b") { flagsB.checkout }
        try await eventually("a's statement completed") { a.relay.statistics.sent == 1 }
        let errors = recorder.all.filter { $0.level == .error }.map(\.rendered)
        print("foreign table: \(errors)")
        #expect(errors.contains { $0.contains("not created by the relay") && $0.contains(tableName) })
        // The table is as it was: its two columns, no rows, its own comment (none).
        var columns: [String] = []
        var rows = -1
        var comment: String? = "?"
        try await withRawConnection { connection in
            for try await (name) in try await connection.query(
                "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass(\(table.quoted)) AND attnum > 0 ORDER BY attnum",
                logger: TestServer.quietLogger
            ).decode(String.self) { columns.append(name) }
            for try await (count, description) in try await connection.query(
                PostgresQuery(
                    unsafeSQL: #"SELECT count(*)::int, obj_description('"\#(tableName)"'::regclass, 'pg_class') FROM "\#(tableName)""#),
                logger: TestServer.quietLogger
            ).decode((Int, String?).self) {
                rows = count
                comment = description
            }
        }
        #expect(columns == ["id", "note"])
        #expect(rows == 0)
        #expect(comment == nil)
        await a.stop()
        await b.stop()
        try await executeRaw(#"DROP TABLE "\#(tableName)""#)
    }

    @Test func stateTableNamesCannotLeaveTheirQuotes() throws {
        #expect(throws: RelayError.self) { try RelayStateTable("") }
        #expect(throws: RelayError.self) { try RelayStateTable(#"x"; DROP TABLE y; --"#) }
        #expect(throws: RelayError.self) { try RelayStateTable("a\u{0}b") }
        #expect(throws: RelayError.self) { try RelayStateTable(String(repeating: "t", count: 64)) }
        #expect(try RelayStateTable(String(repeating: "t", count: 63)).name.utf8.count == 63)
        #expect(try RelayStateTable("Mixed Case; state").quoted == #""Mixed Case; state""#)
        let configuration = RelayConfiguration(transport: PostgresTransport(configuration: try TestServer.connection()))
        #expect(configuration.stateTable == RelayStateTable.default)
    }
}

// Issue #23, logs an operator can act on.
extension RelayTests {
    /// The warnings a relay connecting with `variables` (over the test
    /// server's) logs about its connection, once it has logged one.
    func connectionWarnings(_ variables: [String: String]) async throws -> [String] {
        var environment = TestServer.environment
        environment["PGSSLMODE"] = "disable"
        environment.merge(variables) { $1 }
        let recorder = LogRecorder()
        var configuration = RelayConfiguration(
            postgres: try RelayConfiguration.environment(environment), channel: try TestServer.freshChannel("logs"),
            logger: recorder.logger(level: .info))
        configuration.initialReconnectDelay = .milliseconds(200)
        let relay = try Relay(configuration: configuration)
        let task = Task { await relay.run() }
        try await eventually("a connection warning") { recorder.all.contains { $0.message == "relay connection ended" } }
        task.cancel()
        await task.value
        return recorder.all.filter { $0.message == "relay connection ended" }.map(\.rendered)
    }

    @Test func connectionFailuresAreLoggedAsWhatHappenedWithoutSecrets() async throws {
        try await executeRaw(
            "DO $$ BEGIN CREATE ROLE relay_test_nologin NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        let refused = try await connectionWarnings(["PGUSER": "relay_test_nologin", "PGPASSWORD": "s3cret-not-logged"])
        let tls = try await connectionWarnings(["PGSSLMODE": "require"])
        let missing = try await connectionWarnings(["PGDATABASE": "relay_test_no_such_database"])
        print("logged:\n  \(refused[0])\n  \(tls[0])\n  \(missing[0])")
        #expect(refused[0].contains("authentication refused") && refused[0].contains("SQLSTATE 28000"))
        #expect(tls[0].contains("TLS"))
        #expect(missing[0].contains("does not exist") && missing[0].contains("SQLSTATE 3D000"))
        for line in refused + tls + missing {
            #expect(!line.contains("s3cret"))
            #expect(!line.contains("Generic description"))
        }

        // The server ending the session (a restart, pg_terminate_backend).
        let recorder = LogRecorder()
        let a = try await RunningRelay(
            channel: try TestServer.freshChannel("logs"), applicationName: "relay-test-logs",
            logger: recorder.logger(level: .info))
        try await terminateBackends(of: "relay-test-logs")
        try await eventually("reconnected") { a.reconnected }
        let ended = recorder.all.filter { $0.message == "relay connection ended" }.map(\.rendered)
        print("logged: \(ended)")
        #expect(ended.count == 1)
        #expect(ended.allSatisfy { $0.contains("closed") || $0.contains("57P01") })
        #expect(ended.allSatisfy { !$0.contains("Generic description") })
        await a.stop()
    }
}
#endif

#if Relay
import Foundation
import PostgresNIO
import SwiftKVO
import Synchronization
import Testing

@testable import SwiftKVORelay

/// Replicated values of several types, for the rows an adversary writes.
final class Mixed: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["text": \Mixed.text, "nested": \Mixed.nested, "maximal": \Mixed.maximal, "negative": \Mixed.negative, "instance": \Mixed.instance, "good": \Mixed.good] }
    @Observed var text = ""
    @Observed var nested = 0
    @Observed var maximal = 0
    @Observed var negative = 0
    @Observed var instance = 0
    @Observed var good = 0

    static func replicate(_ mixed: Mixed, on relay: Relay) throws {
        try relay.replicate(\.text, of: mixed, as: "m.text")
        try relay.replicate(\.nested, of: mixed, as: "m.nested")
        try relay.replicate(\.maximal, of: mixed, as: "m.maximal")
        try relay.replicate(\.negative, of: mixed, as: "m.negative")
        try relay.replicate(\.instance, of: mixed, as: "m.instance")
        try relay.replicate(\.good, of: mixed, as: "m.good")
    }
}

// The state table attacked by a client of the database: rows written with
// psql, tables made in its way, the server and the process stopped mid-write.
extension RelayTests {
    @Test func rowsAtTheEdgesOfEveryColumnAreDroppedAndCountedAndNothingElseIsRead() async throws {
        let channel = try TestServer.freshChannel("stateedges")
        let maker = try await RunningRelay(channel: channel, prepare: { try Mixed.replicate(Mixed(), on: $0) })
        await maker.stop()
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        let deep = String(repeating: "[", count: 3000) + String(repeating: "]", count: 3000)
        let rows: [(name: String, stamp: Int64, instance: String, message: String)] = [
            // A string with NUL and control characters: a value like any other.
            ("m.text", Int64(now), "mallory", Self.storedSet("m.text", #""a\u0000b\u001b[2J""#, stamp: now)),
            // Nested 3000 deep, under the size limit.
            ("m.nested", Int64(now), "mallory", Self.storedSet("m.nested", deep, stamp: now)),
            // The largest stamps either column can hold.
            ("m.maximal", Int64.max, "mallory", Self.storedSet("m.maximal", "5", stamp: UInt64(Int64.max))),
            ("m.negative", -1, "mallory", Self.storedSet("m.negative", "5", stamp: UInt64.max)),
            // The message's instance id carries a NUL the column cannot.
            ("m.instance", Int64(now), "mallory", Self.storedSet("m.instance", "5", stamp: now, instance: #"mal\u0000lory"#)),
            ("m.good", Int64(now), "mallory", Self.storedSet("m.good", "42", stamp: now)),
            // Names not replicated here, and a replicated name under another channel: never read.
            ("m.unreplicated", Int64(now), "mallory", Self.storedSet("m.unreplicated", "1", stamp: now)),
            (String(repeating: "n", count: 2_000), Int64(now), "mallory", "{}"),
        ]
        for row in rows {
            try await Self.insertStateRow(channel, name: row.name, stamp: row.stamp, instance: row.instance, message: row.message)
        }
        let elsewhere = try TestServer.freshChannel("stateedges")
        try await Self.insertStateRow(elsewhere, name: "m.good", stamp: Int64(now + 1), instance: "mallory", message: "{")

        let mixed = Mixed()
        let recorder = LogRecorder()
        let b = try await RunningRelay(
            channel: channel, logger: recorder.logger(level: .info), prepare: { try Mixed.replicate(mixed, on: $0) })
        let statistics = b.relay.statistics
        print("rows at the edges: statistics \(statistics)")
        #expect(mixed.text == "a\u{0}b\u{1b}[2J")
        let untouched: [Int] = [mixed.nested, mixed.maximal, mixed.negative, mixed.instance]
        #expect(untouched == [0, 0, 0, 0])
        #expect(mixed.good == 42)
        #expect(statistics.stateValuesApplied == 2)
        #expect(statistics.droppedMalformed == 3)  // too deep; a negative stamp; an id with a NUL
        #expect(statistics.droppedFutureStamp == 1)
        #expect(statistics.dropped == 4)
        // Dropped rows are counted, not logged one by one.
        #expect(recorder.all.filter { $0.level >= .warning }.isEmpty)

        // The row stamped at the end of time is replaced by the next write.
        mixed.maximal = 7
        try await eventually("b's write committed") { b.relay.statistics.sent == 1 }
        let table = try await Self.stateRows(channel)
        #expect(table["m.maximal"].flatMap { Self.storedValue($0.message) } == "7")
        await b.stop()
    }

    @Test func aTableCarryingTheMarkWithOtherColumnsIsReportedAndPostsStillFlow() async throws {
        let channel = try TestServer.freshChannel("stateforged")
        let tableName = "forged_\(channel.name)"
        // Someone else's table, with the relay's comment copied onto it.
        try await executeRaw(
            #"CREATE TABLE "\#(tableName)" (channel text, name text, stamp text, instance text, message integer)"#)
        try await executeRaw(#"COMMENT ON TABLE "\#(tableName)" IS '\#(PostgresTransport.Publisher.mark)'"#)
        try await executeRaw(
            #"INSERT INTO "\#(tableName)" VALUES (\#(sqlLiteral(channel.name)), 'flags.checkout', 'soon', 'mallory', 1)"#)
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
        flagsA.checkout = true
        try await eventually("a's write at b") { flagsB.checkout }
        try await eventually("a's statement completed") { a.relay.statistics.sent == 1 }
        flagsA.checkout = false
        try await eventually("a's second write at b") { !flagsB.checkout }
        try await eventually("a's second statement completed") { a.relay.statistics.sent == 2 }
        let logged = recorder.all.filter { $0.level >= .warning }.map(\.rendered)
        print("forged mark: \(logged)")
        // The first load fails on the table's columns: from then on the
        // connection writes without it, and never tries it again.
        #expect(logged.filter { $0.contains("could not load") && $0.contains(tableName) }.count == 1)
        #expect(logged.filter { $0.contains("could not write its state table") }.isEmpty)
        #expect(a.relay.statistics.dropped == 0 && b.relay.statistics.dropped == 0)
        // The table is as it was.
        var rows: [String] = []
        try await withRawConnection { connection in
            for try await (name, stamp, message) in try await connection.query(
                PostgresQuery(unsafeSQL: #"SELECT name, stamp, message FROM "\#(tableName)""#),
                logger: TestServer.quietLogger
            ).decode((String, String, Int).self) { rows.append("\(name) \(stamp) \(message)") }
        }
        #expect(rows == ["flags.checkout soon 1"])
        await a.stop()
        await b.stop()
        try await executeRaw(#"DROP TABLE "\#(tableName)""#)
    }

    @Test func aTableNameThatNeedsQuotingIsMadeUsedAndReadBackAsItIs() async throws {
        let channel = try TestServer.freshChannel("statequoted")
        let tableName = "Relay State; DROP TABLE x; -- 'it''s' $relay$ \\ \(channel.name.suffix(8))"
        let table = try RelayStateTable(tableName)
        let flagsA = Flags()
        let a = try await RunningRelay(
            channel: channel, configure: { $0.stateTable = table },
            prepare: { try $0.replicate(\.banner, of: flagsA, as: "flags.banner") })
        flagsA.banner = "quoted"
        try await eventually("a's write committed") { a.relay.statistics.sent == 1 }
        let flagsC = Flags()
        let c = try await RunningRelay(
            channel: channel, configure: { $0.stateTable = table },
            prepare: { try $0.replicate(\.banner, of: flagsC, as: "flags.banner") })
        #expect(flagsC.banner == "quoted")
        #expect(c.relay.statistics.stateValuesApplied == 1)
        var found: [String] = []
        try await withRawConnection { connection in
            for try await name in try await connection.query(
                "SELECT relname::text FROM pg_class WHERE relname = \(tableName) AND relkind = 'r'",
                logger: TestServer.quietLogger
            ).decode(String.self) { found.append(name) }
        }
        #expect(found == [tableName])
        await a.stop()
        await c.stop()
        try await executeRaw("DROP TABLE \(table.quoted)")
    }
}

// SIGTERM while assignments are being sent: in the serialized suite of the
// other ServiceGroup tests, since a signal reaches every group in the process.
extension RelayServiceTests {
    @Test func sigtermDuringAFlushOfAssignmentsLeavesEveryLastValueInTheTable() async throws {
        let channel = try TestServer.freshChannel("stateflush")
        let settings = Settings()
        let sender = try Self.relay(channel: channel) { $0.shutdownTimeout = .seconds(30) }
        try Settings.replicate(settings, on: sender)
        let group = Self.group([sender])
        let running = Task { try await group.run() }
        try await within(.seconds(30)) { try await sender.waitUntilListening() }
        // Queue many statements' worth of assignments, then signal while they are sent.
        let writes = 8_000
        for n in 1...writes { settings[keyPath: Settings.replicated[n % 4].keyPath] = n }
        let queuedAtSignal = sender.queuedMessages
        kill(getpid(), SIGTERM)
        try await within(.seconds(60)) { try await running.value }
        let report = try #require(sender.shutdownReport)
        print("SIGTERM during a flush: \(queuedAtSignal) of \(writes) queued at the signal; \(report)")
        #expect(report.sentEverything)
        #expect(sender.statistics.sent == writes)

        let table = try await RelayTests.stateRows(channel)
        #expect(Settings.replicated.map { table[$0.name].flatMap { RelayTests.storedValue($0.message) } } == settings.values.map { "\($0)" })
        let later = Settings()
        let c = try await RunningRelay(channel: channel, prepare: { try Settings.replicate(later, on: $0) })
        #expect(later.values == settings.values)
        #expect(later.values == [writes, writes - 3, writes - 2, writes - 1])
        await c.stop()
    }
}

extension RelayTests {
    // Issue #35, item 8, for rows: the channel is under the signature, so a
    // signed row copied from another channel sharing the key is not loaded.
    @Test func aSignedRowCopiedFromAnotherChannelIsDropped() async throws {
        let x = try TestServer.freshChannel("rowx")
        let y = try TestServer.freshChannel("rowy")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let settingsX = Settings()
        let a = try await RunningRelay(
            channel: x, configure: { $0.signing = signing }, prepare: { try Settings.replicate(settingsX, on: $0) })
        settingsX.a = 7
        try await eventually("a's write committed") { a.relay.statistics.sent == 1 }
        await a.stop()
        let written = try await Self.stateRows(x)
        let row = try #require(written["cfg.a"])
        // The row as it is, stamp included: only its channel differs.
        let stampText = try #require(row.message.split(separator: ",").first { $0.hasPrefix(#""c":"#) })
        let stamp = try #require(Int64(stampText.dropFirst(4)))
        try await Self.insertStateRow(y, name: "cfg.a", stamp: stamp, instance: row.instance, message: row.message)
        let settingsY = Settings()
        let b = try await RunningRelay(
            channel: y, configure: { $0.signing = signing }, prepare: { try Settings.replicate(settingsY, on: $0) })
        #expect(settingsY.values == [0, 0, 0, 0])
        #expect(b.relay.statistics.droppedBadSignature == 1)
        #expect(b.relay.statistics.stateValuesApplied == 0)
        await b.stop()
    }
}
#endif

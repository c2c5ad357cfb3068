#if Relay
import Foundation
import MetricsTestKit
import SwiftKVO
import Testing

@testable import SwiftKVORelay

/// The relay's swift-metrics instruments, recorded into MetricsTestKit's
/// TestMetrics, against the real server.
@Suite(.serialized, .enabled(if: TestServer.isConfigured, "needs the PostgreSQL server make relay-test starts"))
struct RelayMetricsTests {
    @Test func countersGaugesAndTheTimerFollowWhatTheRelayDid() async throws {
        let channel = try TestServer.freshChannel("metrics")
        let metrics = TestMetrics()
        let measured = try await RunningRelay(channel: channel, applicationName: "relay-metrics") {
            $0.metrics = RelayMetrics(
                dimensions: [("service", "test")], reportingInterval: .milliseconds(20), factory: metrics)
        }
        let other = try await RunningRelay(channel: channel)
        for relay in [measured.relay, other.relay] { try relay.bridge(.testEvent, userInfoTypes: ["n": Int.self]) }
        let dimensions = [("channel", channel.name), ("service", "test")]
        func counter(_ label: String, _ extra: [(String, String)] = []) -> Int64 {
            metrics.counterTotal(label: label, dimensions: dimensions + extra)
        }

        for n in 1...5 { try measured.relay.post(name: .testEvent, userInfo: ["n": n]) }
        for n in 1...3 { try other.relay.post(name: .testEvent, userInfo: ["n": n]) }
        // Hostile input from another client: one malformed message, one for a name nobody bridges.
        try await notifyRaw(["not json", #"{"v":1}"#], on: channel)
        try await eventually("sent and delivered counted") {
            counter(RelayMetrics.sentLabel) == 5 && counter(RelayMetrics.deliveredLabel) == 3
                && counter(RelayMetrics.droppedLabel, [("reason", "malformed")]) == 2
        }
        #expect(counter(RelayMetrics.notSentLabel) == 0)
        #expect(counter(RelayMetrics.droppedLabel, [("reason", "stale")]) == 0)
        #expect(try metrics.expectGauge(RelayMetrics.queueDepthLabel, dimensions).lastValue == 0)
        #expect(try metrics.expectGauge(RelayMetrics.listeningLabel, dimensions).lastValue == 1)
        // One statement at least was timed, each in a plausible time.
        let timer = try metrics.expectTimer(RelayMetrics.publishDurationLabel, dimensions)
        #expect(!timer.values.isEmpty && timer.values.allSatisfy { $0 > 0 && $0 < 60_000_000_000 })
        // Every reason has its counter, and they sum to the statistics' total.
        let reasons = RelayInstruments.dropReasons.map(\.0)
        #expect(Set(metrics.counters(label: RelayMetrics.droppedLabel).compactMap { counter in
            counter.dimensions.first { $0.0 == "reason" }?.1
        }) == Set(reasons))
        #expect(
            reasons.map { counter(RelayMetrics.droppedLabel, [("reason", $0)]) }.reduce(0, +)
                == Int64(measured.relay.statistics.dropped))

        // A lost connection: the reconnect is counted, the listening gauge comes back to 1.
        try await terminateBackends(of: "relay-metrics")
        try await eventually("reconnected") { measured.reconnected }
        try await eventually("reconnect counted") { counter(RelayMetrics.reconnectsLabel) == 1 }
        try await eventually("listening again") {
            (try? metrics.expectGauge(RelayMetrics.listeningLabel, dimensions).lastValue) == 1
        }
        #expect(counter(RelayMetrics.resynchronizationsLabel) >= 1)

        await measured.stop()
        await other.stop()
        // The last update happens as run() returns: the counters equal the statistics.
        let final = measured.relay.statistics
        #expect(counter(RelayMetrics.sentLabel) == Int64(final.sent))
        #expect(counter(RelayMetrics.deliveredLabel) == Int64(final.delivered))
        #expect(counter(RelayMetrics.missedLabel) == Int64(final.missed))
    }

    @Test func stateTableLoadsFailuresAndAppliedValuesAreCounted() async throws {
        let channel = try TestServer.freshChannel("statemetrics")
        let flagsA = Flags()
        let a = try await RunningRelay(channel: channel, prepare: { try $0.replicate(\.checkout, of: flagsA, as: "flags.checkout") })
        flagsA.checkout = true
        try await eventually("a's write committed") { a.relay.statistics.sent == 1 }
        func measuredRelay(
            _ metrics: TestMetrics, flags: Flags, configure: @escaping (inout RelayConfiguration) -> Void = { _ in }
        ) async throws -> RunningRelay {
            try await RunningRelay(
                channel: channel,
                configure: {
                    $0.metrics = RelayMetrics(reportingInterval: .milliseconds(20), factory: metrics)
                    configure(&$0)
                }, prepare: { try $0.replicate(\.checkout, of: flags, as: "flags.checkout") })
        }
        let dimensions = [("channel", channel.name)]

        // A new instance loads a's value.
        let metrics = TestMetrics()
        let flagsB = Flags()
        let b = try await measuredRelay(metrics, flags: flagsB)
        try await eventually("b's load counted") {
            metrics.counterTotal(label: RelayMetrics.stateLoadsLabel, dimensions: dimensions + [("outcome", "completed")]) == 1
                && metrics.counterTotal(label: RelayMetrics.stateValuesAppliedLabel, dimensions: dimensions) == 1
        }
        #expect(flagsB.checkout)
        #expect(metrics.counterTotal(label: RelayMetrics.stateLoadsLabel, dimensions: dimensions + [("outcome", "failed")]) == 0)
        await b.stop()

        // A table of that name that carries the relay's mark and other columns: the load fails.
        let tableName = "forged_\(channel.name)"
        try await executeRaw(#"CREATE TABLE "\#(tableName)" (channel integer, name integer)"#)
        try await executeRaw(#"COMMENT ON TABLE "\#(tableName)" IS '\#(PostgresTransport.Publisher.mark)'"#)
        let forged = try RelayStateTable(tableName)
        let failing = TestMetrics()
        let flagsC = Flags()
        let c = try await measuredRelay(failing, flags: flagsC) { $0.stateTable = forged }
        try await eventually("c's failed load counted") {
            failing.counterTotal(label: RelayMetrics.stateLoadsLabel, dimensions: dimensions + [("outcome", "failed")]) == 1
        }
        #expect(c.relay.statistics.stateLoadFailures == 1 && c.relay.statistics.stateLoads == 0)
        #expect(failing.counterTotal(label: RelayMetrics.stateLoadsLabel, dimensions: dimensions + [("outcome", "completed")]) == 0)
        await c.stop()
        await a.stop()
        try await executeRaw(#"DROP TABLE "\#(tableName)""#)
    }

    @Test func noMetricsWhenTheConfigurationHasNone() async throws {
        let channel = try TestServer.freshChannel("nometrics")
        let relay = try await RunningRelay(channel: channel) { $0.metrics = nil }
        try relay.relay.bridge(.testEvent)
        try relay.relay.post(name: .testEvent)
        try await eventually("sent") { relay.relay.statistics.sent == 1 }
        await relay.stop()
    }
}
#endif

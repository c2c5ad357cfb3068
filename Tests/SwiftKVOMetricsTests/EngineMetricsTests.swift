#if Metrics
import MetricsTestKit
import SwiftKVO
import SwiftKVOMetrics
import Testing

@Suite struct EngineMetricsTests {
    final class Thermostat: KeyValueObservable {
        let kvoRegistrar = KVORegistrar()
        static var observableKeyPaths: [String: AnyKeyPath] { ["celsius": \Thermostat.celsius] }
        @Observed var celsius = 20.0
    }

    @Test func reportRecordsTheEngineStatisticsOnGauges() throws {
        let metrics = TestMetrics()
        let reporter = EngineMetrics(dimensions: [("service", "test")], factory: metrics)
        let thermostat = Thermostat()
        let token = try thermostat.observe(\.celsius) { _, _ in }
        defer { token.invalidate() }
        let statistics = EngineStatistics.current
        reporter.report(statistics)
        let dimensions = [("service", "test")]
        let observations = try metrics.expectGauge(EngineMetrics.observationsLabel, dimensions)
        #expect(observations.lastValue == Double(statistics.observations))
        #expect(statistics.observations >= 1)
        #expect(try metrics.expectGauge(EngineMetrics.keysLabel, dimensions).lastValue == Double(statistics.keys))
        #expect(
            try metrics.expectGauge(EngineMetrics.pendingReleasesLabel, dimensions).lastValue
                == Double(statistics.pendingReleases))
        #expect(try metrics.expectGauge(EngineMetrics.bytesLabel, dimensions).lastValue == Double(statistics.bytesHeld))
        #expect(statistics.bytesHeld > 0)
    }

    @Test func runReportsUntilCancelledAndOnceMoreAtTheEnd() async throws {
        let metrics = TestMetrics()
        let reporter = EngineMetrics(interval: .milliseconds(10), factory: metrics)
        let task = Task { try await reporter.run() }
        // At start, then every interval: wait for three reports, however
        // slowly a loaded machine runs the task (no timing is asserted).
        func reports() -> Int { (try? metrics.expectGauge(EngineMetrics.keysLabel))?.values.count ?? 0 }
        while reports() < 3 { try await Task.sleep(for: .milliseconds(10)) }
        let beforeTheEnd = reports()
        task.cancel()
        try await task.value
        // Once more as it ends.
        #expect(reports() > beforeTheEnd)
    }
}
#endif

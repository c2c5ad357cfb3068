#if Metrics
import MetricsTestKit
import SwiftKVO
import SwiftKVOMetrics
import Testing

@Suite struct EngineMetricsTests {
    final class Thermostat: KeyValueObservable {
        let kvoRegistrar = KVORegistrar()
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
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        try await task.value
        let keys = try metrics.expectGauge(EngineMetrics.keysLabel)
        #expect(keys.values.count >= 3)
    }
}
#endif

#if Metrics
import Metrics
import ServiceLifecycle
import SwiftKVO

/// Reports the observation engine's statistics (`EngineStatistics`)
/// as swift-metrics gauges, to whatever backend the application bootstrapped
/// (swift-prometheus, swift-otel, …) or the factory it passes.
///
/// The core engine depends on nothing: this reporter reads
/// `EngineStatistics.current` and records it. Run it as a
/// `Service` next to the rest of the application; it reports once at start,
/// then every ``interval``, and once more when it stops:
///
/// ```swift
/// let engine = EngineMetrics(dimensions: [("service", "checkout")])
/// let group = ServiceGroup(services: [engine, relay], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// | gauge                            | value                                                 |
/// |----------------------------------|-------------------------------------------------------|
/// | `swiftkvo_engine_observations`   | observations registered and not yet removed           |
/// | `swiftkvo_engine_keys`           | interned keys                                         |
/// | `swiftkvo_engine_pending_releases` | removed observations waiting for their grace period |
/// | `swiftkvo_engine_bytes` | bytes the engine holds in its own structures (`EngineStatistics.bytesHeld`) |
///
/// Each carries ``dimensions``. Reading the statistics takes the engine's
/// writer lock for a moment, never a notification's path (SPEC §2.20).
///
/// ## Thread safety
/// A value type whose gauges are Sendable: ``report(_:)`` may be called from
/// any thread, also while ``run()`` runs.
public struct EngineMetrics: Service, Sendable {
    /// The gauge of `EngineStatistics.observations`.
    public static let observationsLabel = "swiftkvo_engine_observations"
    /// The gauge of `EngineStatistics.keys`.
    public static let keysLabel = "swiftkvo_engine_keys"
    /// The gauge of `EngineStatistics.pendingReleases`.
    public static let pendingReleasesLabel = "swiftkvo_engine_pending_releases"
    /// The gauge of `EngineStatistics.bytesHeld`.
    public static let bytesLabel = "swiftkvo_engine_bytes"

    /// How often ``run()`` reports.
    public let interval: Duration
    /// The dimensions every gauge carries.
    public let dimensions: [(String, String)]

    private let observations: Gauge
    private let keys: Gauge
    private let pendingReleases: Gauge
    private let bytes: Gauge

    /// A reporter whose gauges are made now, by `factory`.
    ///
    /// - Parameters:
    ///   - interval: How often ``run()`` reports (default 10 seconds; must be positive).
    ///   - dimensions: Dimensions for every gauge (default none).
    ///   - factory: Where the gauges are made (default: the factory the
    ///     application bootstrapped with `MetricsSystem.bootstrap`).
    public init(
        interval: Duration = .seconds(10), dimensions: [(String, String)] = [],
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        precondition(interval > .zero, "EngineMetrics: interval must be positive")
        self.interval = interval
        self.dimensions = dimensions
        observations = Gauge(label: Self.observationsLabel, dimensions: dimensions, factory: factory)
        keys = Gauge(label: Self.keysLabel, dimensions: dimensions, factory: factory)
        pendingReleases = Gauge(label: Self.pendingReleasesLabel, dimensions: dimensions, factory: factory)
        bytes = Gauge(label: Self.bytesLabel, dimensions: dimensions, factory: factory)
    }

    /// Records `statistics` (default: the engine's now) on the gauges.
    ///
    /// - Parameter statistics: What to record.
    public func report(_ statistics: EngineStatistics = .current) {
        observations.record(statistics.observations)
        keys.record(statistics.keys)
        pendingReleases.record(statistics.pendingReleases)
        bytes.record(statistics.bytesHeld)
    }

    /// Reports now and every ``interval`` until graceful shutdown or
    /// cancellation, then once more, and returns. Never throws.
    public func run() async throws {
        report()
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                report()
            }
        }
        report()
    }
}
#endif

#if Relay
import Metrics

/// How a relay reports through swift-metrics (``RelayConfiguration/metrics``):
/// the backend, the dimensions, and how often its counters are brought up to date.
///
/// The relay records into whatever backend the application bootstrapped
/// (`MetricsSystem.bootstrap` with swift-prometheus, swift-otel, …) unless
/// ``factory`` names another. Every metric carries the dimension
/// `("channel", <channel name>)` followed by ``dimensions``:
///
/// | metric | kind | what it counts |
/// |---|---|---|
/// | `swiftkvo_relay_messages_sent_total` | counter | messages the broker accepted (``RelayStatistics/sent``) |
/// | `swiftkvo_relay_messages_delivered_total` | counter | remote messages delivered here (``RelayStatistics/delivered``) |
/// | `swiftkvo_relay_messages_not_sent_total` | counter | local posts and assignments never sent (``RelayStatistics/notSent``) |
/// | `swiftkvo_relay_messages_dropped_total` | counter | received messages dropped, with dimension `reason` (below) |
/// | `swiftkvo_relay_messages_missed_total` | counter | other instances' messages that never arrived (``RelayStatistics/missed``) |
/// | `swiftkvo_relay_reconnects_total` | counter | connections re-established after one was lost |
/// | `swiftkvo_relay_resynchronizations_total` | counter | ``Relay/resynchronize`` notifications posted |
/// | `swiftkvo_relay_incarnation_conflicts_total` | counter | messages continuing an incarnation after a newer one was heard (``RelayStatistics/incarnationConflicts``) |
/// | `swiftkvo_relay_state_loads_total` | counter | loads from the state table, with dimension `outcome`: `completed` (``RelayStatistics/stateLoads``) or `failed` (``RelayStatistics/stateLoadFailures``) |
/// | `swiftkvo_relay_state_values_applied_total` | counter | values from the state table applied (``RelayStatistics/stateValuesApplied``) |
/// | `swiftkvo_relay_state_rows_resigned_total` | counter | state-table rows signed again with the current key (``RelayStatistics/stateRowsResigned``) |
/// | `swiftkvo_relay_queue_depth` | gauge | messages queued, not yet accepted by the broker |
/// | `swiftkvo_relay_listening` | gauge | 1 while connected and listening, else 0 |
/// | `swiftkvo_relay_publish_duration_seconds` | timer | one statement: from handing its messages to the broker to their commit |
///
/// `reason` is one of `malformed`, `unknown_name`, `wrong_type`, `oversized`,
/// `duplicate`, `stale`, `future_stamp`, `shed`, `untracked`, `own_id`,
/// `unsigned`, `bad_signature`, `replayed` — one per `dropped…` counter of
/// ``RelayStatistics``, so the counter summed over reasons is
/// ``RelayStatistics/dropped``.
///
/// The timer is recorded as each statement completes. Counters and gauges
/// follow ``RelayStatistics``, which stays the exact, synchronous view: they
/// are brought up to date every ``reportingInterval`` while ``Relay/run()``
/// runs, and once more when it returns. Nothing is recorded on the path of a
/// post or of a received message.
///
/// ## Thread safety
/// A value type; the relay uses it from its own tasks.
public struct RelayMetrics: Sendable {
    /// Counter of ``RelayStatistics/sent``.
    public static let sentLabel = "swiftkvo_relay_messages_sent_total"
    /// Counter of ``RelayStatistics/delivered``.
    public static let deliveredLabel = "swiftkvo_relay_messages_delivered_total"
    /// Counter of ``RelayStatistics/notSent``.
    public static let notSentLabel = "swiftkvo_relay_messages_not_sent_total"
    /// Counter of the dropped messages, with a dimension `reason`.
    public static let droppedLabel = "swiftkvo_relay_messages_dropped_total"
    /// Counter of ``RelayStatistics/missed``.
    public static let missedLabel = "swiftkvo_relay_messages_missed_total"
    /// Counter of connections re-established after one was lost.
    public static let reconnectsLabel = "swiftkvo_relay_reconnects_total"
    /// Counter of ``RelayStatistics/resynchronizations``.
    public static let resynchronizationsLabel = "swiftkvo_relay_resynchronizations_total"
    /// Counter of ``RelayStatistics/incarnationConflicts``.
    public static let incarnationConflictsLabel = "swiftkvo_relay_incarnation_conflicts_total"
    /// Counter of the loads from the state table, with a dimension `outcome`
    /// (`completed`: ``RelayStatistics/stateLoads``; `failed`:
    /// ``RelayStatistics/stateLoadFailures``).
    public static let stateLoadsLabel = "swiftkvo_relay_state_loads_total"
    /// Counter of ``RelayStatistics/stateValuesApplied``.
    public static let stateValuesAppliedLabel = "swiftkvo_relay_state_values_applied_total"
    /// Counter of ``RelayStatistics/stateRowsResigned``.
    public static let stateRowsResignedLabel = "swiftkvo_relay_state_rows_resigned_total"
    /// Gauge of the messages queued and not yet accepted by the broker.
    public static let queueDepthLabel = "swiftkvo_relay_queue_depth"
    /// Gauge: 1 while the relay is connected and listening, else 0.
    public static let listeningLabel = "swiftkvo_relay_listening"
    /// Timer of each publishing statement, from hand-off to commit.
    public static let publishDurationLabel = "swiftkvo_relay_publish_duration_seconds"

    /// Dimensions added after `("channel", <channel name>)` to every metric
    /// (e.g. `[("service", "checkout")]`). Avoid per-process values such as
    /// the instance id: each new value is a new time series.
    public var dimensions: [(String, String)]
    /// How often counters and gauges are brought up to date (default 1
    /// second; anything under 1 millisecond counts as 1 millisecond).
    public var reportingInterval: Duration
    /// The backend, or nil (the default) for the one bootstrapped with
    /// `MetricsSystem.bootstrap`, looked up when ``Relay/run()`` starts.
    public var factory: (any MetricsFactory)?

    /// Metrics with `dimensions`, brought up to date every
    /// `reportingInterval`, recorded into `factory`.
    ///
    /// - Parameters:
    ///   - dimensions: Dimensions after `("channel", …)` on every metric.
    ///   - reportingInterval: How often counters and gauges are updated (at least 1 ms).
    ///   - factory: The backend (default: the bootstrapped one).
    public init(
        dimensions: [(String, String)] = [], reportingInterval: Duration = .seconds(1),
        factory: (any MetricsFactory)? = nil
    ) {
        self.dimensions = dimensions
        self.reportingInterval = reportingInterval
        self.factory = factory
    }
}

/// The instruments of one running relay, and what they were last told.
final class RelayInstruments: Sendable {
    let sent: Counter
    let delivered: Counter
    let notSent: Counter
    let missed: Counter
    let reconnects: Counter
    let resynchronizations: Counter
    let incarnationConflicts: Counter
    let stateLoads: Counter
    let stateLoadFailures: Counter
    let stateValuesApplied: Counter
    let stateRowsResigned: Counter
    let dropped: [(KeyPath<RelayStatistics, Int> & Sendable, Counter)]
    let queueDepth: Gauge
    let listening: Gauge
    let publishDuration: Timer

    /// The reason dimension of each `dropped…` counter.
    static let dropReasons: [(String, KeyPath<RelayStatistics, Int> & Sendable)] = [
        ("malformed", \.droppedMalformed), ("unknown_name", \.droppedUnknownName),
        ("wrong_type", \.droppedWrongType), ("oversized", \.droppedOversized),
        ("duplicate", \.droppedDuplicate), ("stale", \.droppedStale),
        ("future_stamp", \.droppedFutureStamp), ("shed", \.droppedShed),
        ("untracked", \.droppedUntracked), ("own_id", \.droppedOwnID),
        ("unsigned", \.droppedUnsigned), ("bad_signature", \.droppedBadSignature),
        ("replayed", \.droppedReplayed),
    ]

    init(_ metrics: RelayMetrics, channel: RelayChannel) {
        let factory = metrics.factory ?? MetricsSystem.factory
        let dimensions = [("channel", channel.name)] + metrics.dimensions
        func counter(_ label: String) -> Counter { Counter(label: label, dimensions: dimensions, factory: factory) }
        sent = counter(RelayMetrics.sentLabel)
        delivered = counter(RelayMetrics.deliveredLabel)
        notSent = counter(RelayMetrics.notSentLabel)
        missed = counter(RelayMetrics.missedLabel)
        reconnects = counter(RelayMetrics.reconnectsLabel)
        resynchronizations = counter(RelayMetrics.resynchronizationsLabel)
        incarnationConflicts = counter(RelayMetrics.incarnationConflictsLabel)
        stateLoads = Counter(
            label: RelayMetrics.stateLoadsLabel, dimensions: dimensions + [("outcome", "completed")], factory: factory)
        stateLoadFailures = Counter(
            label: RelayMetrics.stateLoadsLabel, dimensions: dimensions + [("outcome", "failed")], factory: factory)
        stateValuesApplied = counter(RelayMetrics.stateValuesAppliedLabel)
        stateRowsResigned = counter(RelayMetrics.stateRowsResignedLabel)
        dropped = Self.dropReasons.map { reason, keyPath in
            (
                keyPath,
                Counter(label: RelayMetrics.droppedLabel, dimensions: dimensions + [("reason", reason)], factory: factory)
            )
        }
        queueDepth = Gauge(label: RelayMetrics.queueDepthLabel, dimensions: dimensions, factory: factory)
        listening = Gauge(label: RelayMetrics.listeningLabel, dimensions: dimensions, factory: factory)
        publishDuration = Self.publishTimer(metrics, channel: channel)
    }

    /// The publish timer alone (each connection's publisher gets it).
    static func publishTimer(_ metrics: RelayMetrics, channel: RelayChannel) -> Timer {
        Timer(
            label: RelayMetrics.publishDurationLabel, dimensions: [("channel", channel.name)] + metrics.dimensions,
            preferredDisplayUnit: .seconds, factory: metrics.factory ?? MetricsSystem.factory)
    }

    /// What the counters were last brought to.
    struct Reported {
        var statistics = RelayStatistics()
        var reconnects = 0
    }

    /// Adds to each counter what `statistics` counts beyond `reported`, and
    /// sets the gauges.
    func update(
        _ statistics: RelayStatistics, queued: Int, listening isListening: Bool, reported: inout Reported
    ) {
        func add(_ counter: Counter, _ keyPath: KeyPath<RelayStatistics, Int>) {
            let delta = statistics[keyPath: keyPath] - reported.statistics[keyPath: keyPath]
            if delta > 0 { counter.increment(by: delta) }
        }
        add(sent, \.sent)
        add(delivered, \.delivered)
        add(notSent, \.notSent)
        add(missed, \.missed)
        add(resynchronizations, \.resynchronizations)
        add(incarnationConflicts, \.incarnationConflicts)
        add(stateLoads, \.stateLoads)
        add(stateLoadFailures, \.stateLoadFailures)
        add(stateValuesApplied, \.stateValuesApplied)
        add(stateRowsResigned, \.stateRowsResigned)
        for (keyPath, counter) in dropped { add(counter, keyPath) }
        // Every connection established after the first is a reconnect: the
        // lost ones (disconnects), plus the current one if it is up, less the first.
        let established = statistics.disconnects + (isListening ? 1 : 0)
        let reconnectCount = max(reported.reconnects, established - 1)
        if reconnectCount > reported.reconnects { reconnects.increment(by: reconnectCount - reported.reconnects) }
        reported = Reported(statistics: statistics, reconnects: reconnectCount)
        queueDepth.record(queued)
        listening.record(isListening ? 1 : 0)
    }
}

extension Relay {
    /// Brings the metrics up to date every reporting interval until
    /// cancelled, then once more.
    func reportMetrics() async {
        guard let metrics = configuration.metrics else { return }
        let instruments = RelayInstruments(metrics, channel: configuration.channel)
        var reported = RelayInstruments.Reported()
        func update() {
            let snapshot = metricsSnapshot
            instruments.update(
                snapshot.statistics, queued: snapshot.queued, listening: snapshot.listening, reported: &reported)
        }
        update()
        while !Task.isCancelled {
            try? await Task.sleep(for: max(metrics.reportingInterval, .milliseconds(1)))
            update()
        }
    }

    /// `publisher`, timing each statement into the publish timer when metrics are on.
    func measured(_ publisher: any RelayPublisher) -> any RelayPublisher {
        guard let metrics = configuration.metrics else { return publisher }
        let timer = RelayInstruments.publishTimer(metrics, channel: configuration.channel)
        // One that also keeps the state table stays one.
        if let keeper = publisher as? any RelayStatePublisher {
            return MeasuredStatePublisher(base: keeper, timer: timer)
        }
        return MeasuredPublisher(base: publisher, timer: timer)
    }
}

/// A publisher that records how long each of its statements takes.
private struct MeasuredPublisher: RelayPublisher {
    let base: any RelayPublisher
    let timer: Timer

    func publish(_ messages: [String], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        base.publish(messages, completion: timed(completion, timer))
    }
}

/// The same for a publisher that keeps the state table: a statement with
/// rows is timed whole (its NOTIFYs and its rows commit together).
private struct MeasuredStatePublisher: RelayStatePublisher {
    let base: any RelayStatePublisher
    let timer: Timer

    func publish(_ messages: [String], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        base.publish(messages, completion: timed(completion, timer))
    }

    func publish(
        _ messages: [String], recording rows: [RelayStateRow], in table: RelayStateTable, horizon: Int64,
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        base.publish(messages, recording: rows, in: table, horizon: horizon, completion: timed(completion, timer))
    }

    func loadState(
        of names: [String], from table: RelayStateTable, maximumMessageBytes: Int, maximumRows: Int
    ) async throws -> [RelayStateRow] {
        try await base.loadState(
            of: names, from: table, maximumMessageBytes: maximumMessageBytes, maximumRows: maximumRows)
    }

    func resign(_ rows: [(row: RelayStateRow, message: String)], in table: RelayStateTable) async throws {
        try await base.resign(rows, in: table)
    }
}

/// `completion`, recording into `timer` the time from now until it succeeds.
private func timed(
    _ completion: @escaping @Sendable (Result<Void, any Error>) -> Void, _ timer: Timer
) -> @Sendable (Result<Void, any Error>) -> Void {
    let started = ContinuousClock.now
    return { result in
        if case .success = result { timer.record(duration: .now - started) }
        completion(result)
    }
}
#endif

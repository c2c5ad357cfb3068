#if Relay
import Logging

/// The seam between a relay and its broker: how messages (strings of at most
/// ``maximumPayloadBytes`` bytes) are published to and received from a channel.
///
/// ``PostgresTransport`` is the one implementation: PostgreSQL `LISTEN`/`NOTIFY`.
/// Another broker with the same guarantees — delivery to connected
/// subscribers, order per publisher, nothing kept for a disconnected one —
/// (NATS core subjects, Redis pub/sub) plugs in by implementing this protocol:
/// the relay's API, wire format, sequence numbers, deduplication, reconnects
/// and resynchronization stay as they are.
public protocol RelayTransport: Sendable {
    /// The largest message, in UTF-8 bytes, the broker carries whole.
    var maximumPayloadBytes: Int { get }

    /// Runs one connection: connects, subscribes to `channel`, calls
    /// `connected` once with a publisher (only after the subscription is in
    /// place), then calls `receive` with every message on the channel, in the
    /// broker's order, one at a time, until the connection is lost (throws) or
    /// the task is cancelled (returns or throws `CancellationError`).
    ///
    /// - Parameters:
    ///   - channel: The channel to subscribe and publish to.
    ///   - logger: Where the transport logs.
    ///   - connected: Called once the subscription is in place; the relay starts
    ///     publishing through the publisher it gets.
    ///   - receive: Called for each message, on the transport's task; returns
    ///     before the next call.
    func run(
        channel: RelayChannel, logger: Logger,
        connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws
}

/// Publishes messages on the connection of one ``RelayTransport/run(channel:logger:connected:receive:)``.
///
/// A relay has at most one statement in flight per connection, and starts
/// the next from the completion of the last: from the posting thread when
/// nothing is in flight, else from the thread `completion` runs on. So
/// sending costs no task switch of the relay's own.
public protocol RelayPublisher: Sendable {
    /// Starts publishing `messages`, in order, and returns without waiting.
    ///
    /// - Parameters:
    ///   - messages: The messages, each at most
    ///     ``RelayTransport/maximumPayloadBytes`` bytes.
    ///   - completion: Called exactly once, on any thread (possibly before
    ///     `publish` returns): with success once the broker has accepted all of
    ///     `messages` (for PostgreSQL: committed); with an error if the
    ///     connection failed or closed first, in which case any prefix of them
    ///     may have been published. It must not block.
    func publish(_ messages: [String], completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
}
#endif

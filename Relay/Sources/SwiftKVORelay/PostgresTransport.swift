import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// A ``RelayTransport`` on PostgreSQL `LISTEN`/`NOTIFY`, through PostgresNIO.
///
/// One connection per ``run(channel:logger:connected:receive:)``, used both to
/// listen (`LISTEN "channel"`) and to publish: a batch of messages is one
/// statement, `SELECT pg_notify($1, m) FROM unnest($2::text[]) WITH ORDINALITY …`,
/// with the channel and the messages as bound parameters, so its notifications
/// are delivered together, in order, when it commits.
///
/// Credentials and TLS come from the `PostgresConnection.Configuration` you
/// pass (see ``RelayConfiguration/environment(_:)``), never from code.
public struct PostgresTransport: RelayTransport {
    /// PostgreSQL's payload limit: a `NOTIFY` payload must be shorter than 8000 bytes.
    public static let payloadLimit = 7999

    /// The connection settings, TLS included, used for every (re)connection.
    public let configuration: PostgresConnection.Configuration

    /// A transport that connects with `configuration`.
    public init(configuration: PostgresConnection.Configuration) {
        self.configuration = configuration
    }

    /// Under 8000 bytes: ``payloadLimit``.
    public var maximumPayloadBytes: Int { Self.payloadLimit }

    private static let connectionIDs = Atomic<Int>(0)

    /// See ``RelayTransport/run(channel:logger:connected:receive:)``. Throws
    /// ``PostgresTransportError/connectionClosed`` when the server closes the
    /// connection (a restart, `pg_terminate_backend`).
    public func run(
        channel: RelayChannel, logger: Logger,
        connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws {
        let id = Self.connectionIDs.add(1, ordering: .relaxed).newValue
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: id, logger: logger)
        do {
            // Neither waiting for the close nor the notification stream ends on
            // cancellation by itself: closing the connection ends both.
            try await withTaskCancellationHandler {
                try await Self.serve(connection, channel: channel, logger: logger, connected: connected, receive: receive)
            } onCancel: {
                let _: EventLoopFuture<Void> = connection.close()
            }
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private static func serve(
        _ connection: PostgresConnection, channel: RelayChannel, logger: Logger,
        connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Whichever child ends first, closing ends the other before the
            // group waits for it.
            defer { let _: EventLoopFuture<Void> = connection.close() }
            // The notification stream may outlive a dead socket until the
            // next read: the channel's close ends the run at once.
            group.addTask {
                try await connection.closeFuture.get()
                throw PostgresTransportError.connectionClosed
            }
            group.addTask {
                try await connection.listen(on: channel.name) { notifications in
                    connected(Publisher(connection: connection, channel: channel, logger: logger))
                    for try await notification in notifications {
                        receive(notification.payload)
                    }
                }
                throw PostgresTransportError.connectionClosed
            }
            try await group.next()
        }
    }

    private struct Publisher: RelayPublisher {
        let connection: PostgresConnection
        let channel: RelayChannel
        let logger: Logger

        /// Runs the statement, but returns (throwing) as soon as the connection
        /// closes: a query handed to a connection that is closing may never be
        /// answered, and the relay must not wait on it to reconnect.
        func publish(_ messages: [String]) async throws {
            guard !connection.isClosed else { throw PostgresTransportError.connectionClosed }
            let outcome = Mutex<CheckedContinuation<Void, any Error>?>(nil)
            let finish: @Sendable (Result<Void, any Error>) -> Void = { result in
                outcome.withLock { $0.take() }?.resume(with: result)
            }
            try await withCheckedThrowingContinuation { continuation in
                outcome.withLock { $0 = continuation }
                Task {
                    do {
                        try await run(messages)
                        finish(.success(()))
                    } catch {
                        finish(.failure(error))
                    }
                }
                connection.closeFuture.whenComplete { _ in finish(.failure(PostgresTransportError.connectionClosed)) }
            }
        }

        private func run(_ messages: [String]) async throws {
            let rows: PostgresRowSequence
            if messages.count == 1 {
                rows = try await connection.query(
                    "SELECT pg_notify(\(channel.name), \(messages[0]))", logger: logger)
            } else {
                rows = try await connection.query(
                    """
                    SELECT pg_notify(\(channel.name), m) \
                    FROM unnest(\(messages)::text[]) WITH ORDINALITY AS batch(m, i) ORDER BY i
                    """, logger: logger)
            }
            for try await _ in rows {}
        }
    }
}

/// Why a ``PostgresTransport`` run ended.
public enum PostgresTransportError: Error, Hashable, Sendable {
    /// The server closed the connection (or it was lost).
    case connectionClosed
}

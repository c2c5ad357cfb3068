#if Relay
import Logging
import NIOCore
import PostgresNIO
import Synchronization
import SwiftKVO

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

    /// Publishes on one connection. PostgresNIO hands a query to the channel
    /// without a write promise: a query written as the connection closes may
    /// never be answered. So each completion waits on the statement or on the
    /// connection's close, whichever comes first (one close callback per
    /// connection, not per statement), and nothing waits on a closing connection.
    final class Publisher: RelayPublisher {
        let connection: PostgresConnection
        let channel: RelayChannel
        let logger: Logger
        /// Statements not yet answered, by number; nil once the connection closed.
        private let pending = LockedState<(next: UInt64, completions: [UInt64: Completion]?)>((0, [:]))
        /// Whether each state table can be used on this connection (PostgresStateTable.swift).
        let tables = LockedState(TableStatuses())

        typealias Completion = @Sendable (Result<Void, any Error>) -> Void

        init(connection: PostgresConnection, channel: RelayChannel, logger: Logger) {
            self.connection = connection
            self.channel = channel
            self.logger = logger
            // Held by the connection until it closes, which it always does (`serve`).
            connection.closeFuture.whenComplete { _ in
                let completions = self.pending.withLock { pending in
                    defer { pending.completions = nil }
                    return pending.completions ?? [:]
                }
                for completion in completions.values { completion(.failure(PostgresTransportError.connectionClosed)) }
                self.closeTables()
            }
        }

        func publish(_ messages: [String], completion: @escaping Completion) {
            publish(messages, statement: { self.statement(messages) }, completion: completion)
        }

        /// Runs `statement` (which publishes `messages`) and calls `completion` once.
        func publish(
            _ messages: [String], statement: () -> EventLoopFuture<PostgresQueryMetadata>,
            completion: @escaping Completion
        ) {
            let number: UInt64? = pending.withLock { pending in
                guard pending.completions != nil else { return nil }
                pending.next += 1
                pending.completions?[pending.next] = completion
                return pending.next
            }
            guard let number else { return completion(.failure(PostgresTransportError.connectionClosed)) }
            statement().whenComplete { result in
                guard let completion = self.pending.withLock({ $0.completions?.removeValue(forKey: number) }) else { return }
                completion(result.map { _ in () }.mapError { $0 })
            }
        }

        private func statement(_ messages: [String]) -> EventLoopFuture<PostgresQueryMetadata> {
            let query: PostgresQuery =
                messages.count == 1
                ? "SELECT pg_notify(\(channel.name), \(messages[0]))"
                : """
                SELECT pg_notify(\(channel.name), m) \
                FROM unnest(\(messages)::text[]) WITH ORDINALITY AS batch(m, i) ORDER BY i
                """
            return connection.query(query, logger: logger) { _ in }
        }
    }
}

/// Why a ``PostgresTransport`` run ended.
public enum PostgresTransportError: Error, Hashable, Sendable {
    /// The server closed the connection (or it was lost).
    case connectionClosed
}
#endif

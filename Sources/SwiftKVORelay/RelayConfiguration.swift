#if Relay
import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// How a ``Relay`` connects, who it is, and its limits.
public struct RelayConfiguration: Sendable {
    /// The broker.
    public var transport: any RelayTransport
    /// The channel every instance of the service shares (default `swiftkvo_relay`).
    public var channel: RelayChannel
    /// This instance's identity on the wire (default: a new random UUID per
    /// relay). It decides ties between property writes with equal
    /// timestamps, and a relay skips messages carrying its own id; give each
    /// live relay a different one. A fixed id may be reused across restarts:
    /// each relay also sends an incarnation made of its start time and random
    /// bits, so receivers see a restarted instance as new rather than as a
    /// resend, and order its incarnations.
    ///
    /// 1 to 128 bytes of UTF-8 with no control or format characters (no
    /// NUL, ESC, newlines, bidirectional overrides), no line or paragraph
    /// separators and no unassigned or private-use code points: receivers
    /// drop messages with any other id, so ``Relay/init(configuration:)``
    /// refuses it.
    public var instanceID: String
    /// The first delay before reconnecting after a lost or refused
    /// connection; doubled (with jitter) after each failure up to
    /// ``maximumReconnectDelay``, and reset once a connection is up.
    public var initialReconnectDelay: Duration = .milliseconds(50)
    /// The longest delay between two connection attempts.
    public var maximumReconnectDelay: Duration = .seconds(5)
    /// How many messages may wait to be sent (while disconnected, or while the
    /// broker is slower than the posts); past that, posts fail with
    /// ``RelayError/outboxFull(capacity:)``. Bounds the relay's memory.
    public var outboxCapacity = 65_536
    /// How many other instances' sequence numbers are remembered for
    /// deduplication and gap detection. When the table is full, a new id
    /// takes the place of the least recently heard instance if it has been
    /// silent for ``instanceIdleTimeout``. Otherwise, unsigned, of the least
    /// recently heard *stranger* (an id heard in one message only), or if none
    /// is left of the least recently heard instance: invented ids never lock
    /// a new instance out. Signed, a message from the new id is dropped and
    /// counted instead (``RelayStatistics/droppedUntracked``): an instance
    /// that is sending is never forgotten (and its messages replayed as new).
    public var maximumTrackedInstances = 1024
    /// How long an instance must have been silent before a new id may take
    /// its place in a full table (see ``maximumTrackedInstances``); with
    /// ``signing``, at least twice ``maximumClockSkew`` plus a second.
    public var instanceIdleTimeout: Duration = .seconds(60)
    /// The farthest a sequence number may move ahead of the highest heard of
    /// its instance's incarnation and still count as a gap in the same
    /// sequence: a larger jump starts a second line of the incarnation —
    /// reported once as a restart by ``Relay/resynchronize`` — and only from
    /// a message that fully validated (a known name, a body of the registered
    /// types); the sender going on below it is still heard. A number at or
    /// below the highest is a duplicate however far back. At least
    /// ``outboxCapacity``, the farthest a resend reaches back.
    public var maximumSequenceJump: UInt64 = 65_536
    /// How far ahead of this instance's clock a property value's stamp may
    /// be. A value stamped further in the future is dropped and counted
    /// (``RelayStatistics/droppedFutureStamp``), never adopted: otherwise
    /// every write made afterwards by an instance with a correct clock would
    /// be dropped as older. Twice this is how much older (by its start time)
    /// a new incarnation of an instance may be than the latest heard and still
    /// be a restart rather than a replay. Never decides whether a message of
    /// a tracked sequence is new.
    public var maximumClockSkew: Duration = .seconds(30)
    /// The shortest time between two ``Relay/resynchronize`` notifications
    /// (and their warnings) for the same other instance. Gaps and restarts
    /// within it are coalesced into one notification at its end, which
    /// reports every message missed meanwhile.
    public var resynchronizationInterval: Duration = .seconds(1)
    /// How many bytes of received messages may wait to be handled, from all
    /// senders together (each message counted as its size plus 64). Past
    /// that, or past ``receiveBacklogBytesPerSender`` for one sender, a
    /// message is shed (``RelayStatistics/droppedShed``). Bounds the relay's
    /// memory under a flood; a burst of ordinary messages fits (16 MiB holds
    /// 100,000 messages of 100 bytes, or 2,000 of PostgreSQL's largest).
    public var receiveBacklogBytes = 16 << 20
    /// How many bytes of received messages of one sender (as the message's
    /// first bytes name it) may wait to be handled. Senders take turns, so a
    /// sender flooding the channel can neither hold up the others' messages
    /// nor crowd them out of the backlog alone.
    public var receiveBacklogBytesPerSender = 4 << 20
    /// Signed messages (nil: none, the default). The production setting:
    /// without it any client of the database can speak for any instance.
    /// Every instance of a channel must sign with a key the others accept.
    /// See ``RelaySigning``; ``RelaySigning/environment(_:)`` reads the keys
    /// from the environment.
    public var signing: RelaySigning?
    /// The table in which the current value of each replicated property is
    /// kept (default ``RelayStateTable/default``, `swiftkvo_relay_state`,
    /// created when missing; nil: none). Every write of a replicated property
    /// updates it in the same transaction as its `NOTIFY`; an instance loads
    /// it when it starts listening and after any gap, so a new instance holds
    /// the current values as soon as ``Relay/waitUntilListening()`` returns.
    /// Instances of one channel must agree on it. Kept only by a transport
    /// that can (``PostgresTransport``); see ``RelayStateTable`` for the schema.
    public var stateTable: RelayStateTable? = .default
    /// Where the relay logs connections, reconnects and dropped messages.
    public var logger: Logger
    /// How long a graceful shutdown may spend sending what is queued
    /// (default 5 seconds). ``Relay/run()`` returns when the queue is empty or
    /// this time is up, whichever comes first, and reports what it could not
    /// send (``Relay/shutdownReport``). A `ServiceGroup`'s own
    /// `maximumGracefulShutdownDuration`, if shorter, cancels it earlier.
    public var shutdownTimeout: Duration = .seconds(5)
    /// The relay's swift-metrics instruments (``RelayMetrics``: names,
    /// dimensions, backend), or nil for none. Default: reported to the
    /// backend the application bootstrapped with `MetricsSystem.bootstrap`.
    public var metrics: RelayMetrics? = RelayMetrics()

    /// A configuration for `transport`.
    public init(
        transport: any RelayTransport, channel: RelayChannel? = nil, instanceID: String? = nil,
        logger: Logger = Logger(label: "SwiftKVORelay")
    ) {
        self.transport = transport
        self.channel = channel ?? Self.defaultChannel
        self.instanceID = instanceID ?? UUID().uuidString
        self.logger = logger
    }

    /// A configuration for PostgreSQL with `connection`'s settings (host,
    /// credentials, TLS: passed through unchanged).
    public init(
        postgres connection: PostgresConnection.Configuration, channel: RelayChannel? = nil,
        instanceID: String? = nil, logger: Logger = Logger(label: "SwiftKVORelay")
    ) {
        self.init(
            transport: PostgresTransport(configuration: connection), channel: channel,
            instanceID: instanceID, logger: logger)
    }

    private static let defaultChannel = try! RelayChannel("swiftkvo_relay")

    /// PostgreSQL connection settings from libpq's environment variables:
    /// `PGHOST` (a host name, or an absolute path to a Unix socket folder;
    /// default `localhost`), `PGPORT` (5432), `PGUSER` (required),
    /// `PGPASSWORD`, `PGDATABASE` (default: the user name) and `PGSSLMODE`
    /// (`disable`, `prefer` — the default — or `require`; `prefer` and
    /// `require` verify the server's certificate against the system's roots).
    ///
    /// - Parameter environment: The variables (default: the process's).
    /// - Throws: ``RelayError/invalidConfiguration(_:)`` when `PGUSER` is
    ///   missing or a value does not parse; the TLS library's error when its
    ///   context cannot be made.
    public static func environment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> PostgresConnection.Configuration {
        guard let user = environment["PGUSER"], !user.isEmpty else {
            throw RelayError.invalidConfiguration("PGUSER is not set")
        }
        let host = environment["PGHOST"].flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        guard let port = Int(environment["PGPORT"] ?? "5432"), (1...65535).contains(port) else {
            throw RelayError.invalidConfiguration("PGPORT is not a port number")
        }
        let password = environment["PGPASSWORD"]
        let database = environment["PGDATABASE"] ?? user
        if host.hasPrefix("/") {
            let socket = host.hasSuffix(".s.PGSQL.\(port)") ? host : "\(host)/.s.PGSQL.\(port)"
            return .init(unixSocketPath: socket, username: user, password: password, database: database)
        }
        let tls: PostgresConnection.Configuration.TLS
        switch environment["PGSSLMODE"] ?? "prefer" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case "require": tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case let mode: throw RelayError.invalidConfiguration("PGSSLMODE \(mode) is not disable, prefer or require")
        }
        return .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }
}
#endif

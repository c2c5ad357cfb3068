#if Relay
import Foundation
import Logging
import PostgresNIO
import SwiftKVO
import Testing

@testable import SwiftKVORelay

/// The test server, from the environment `make relay-test` sets (PGHOST,
/// PGPORT, PGUSER, PGDATABASE; RELAY_PG_STOP / RELAY_PG_START for the restart test).
enum TestServer {
    static let environment = ProcessInfo.processInfo.environment

    /// Whether a server was configured: `make relay-test` always configures one.
    static let isConfigured = environment["PGPORT"] != nil && environment["PGUSER"] != nil

    static func connection() throws -> PostgresConnection.Configuration {
        var variables = environment
        variables["PGSSLMODE"] = variables["PGSSLMODE"] ?? "disable"
        return try RelayConfiguration.environment(variables)
    }

    /// A channel no other test uses.
    static func freshChannel(_ label: String) throws -> RelayChannel {
        try RelayChannel("test_\(label)_\(UUID().uuidString.prefix(8).lowercased())")
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "SwiftKVORelayTests")
        logger.logLevel = environment["RELAY_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return logger
    }

    /// Runs a shell command given by the environment (the Makefile's pg-stop /
    /// pg-start) and waits for it. Spawned and reaped directly: Foundation's
    /// Process waits until every descendant lets go of its descriptors, and
    /// pg-start leaves the server running.
    static func runCommand(_ variable: String) throws {
        let command = try #require(environment[variable], "\(variable) is not set: run through make relay-test")
        let words: [String] = ["/bin/sh", "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
        let variables: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
        defer { (arguments + variables).forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/sh", nil, nil, arguments + [nil], variables + [nil])
        #expect(spawned == 0, "cannot start \(command)")
        guard spawned == 0 else { return }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        #expect(status == 0, "\(command) failed")
    }
}

/// A relay running on its own task, stopped by `stop()`.
final class RunningRelay: Sendable {
    let relay: Relay
    private let task: Task<Void, Never>

    /// - Parameters:
    ///   - applicationName: The connection's `application_name`, to find its backend.
    ///   - reconnectDelay: The first delay before reconnecting.
    ///   - instanceID: A fixed id (default: a random one).
    ///   - logger: Where the relay logs (default: errors only).
    ///   - configure: Changes to the configuration before the relay is made.
    ///   - prepare: What to do with the relay before it runs (replicate, bridge).
    ///   - waitsUntilListening: Whether to return only once it listens (else at once).
    init(
        channel: RelayChannel, applicationName: String = "relay-test",
        reconnectDelay: Duration = .milliseconds(50), instanceID: String? = nil, logger: Logger? = nil,
        waitsUntilListening: Bool = true,
        configure: (inout RelayConfiguration) -> Void = { _ in }, prepare: (Relay) throws -> Void = { _ in }
    ) async throws {
        var connection = try TestServer.connection()
        connection.options.additionalStartupParameters = [("application_name", applicationName)]
        var configuration = RelayConfiguration(
            postgres: connection, channel: channel, instanceID: instanceID, logger: logger ?? TestServer.quietLogger)
        configuration.initialReconnectDelay = reconnectDelay
        configuration.maximumReconnectDelay = max(reconnectDelay, .milliseconds(500))
        configure(&configuration)
        let relay = try Relay(configuration: configuration)
        try prepare(relay)
        self.relay = relay
        task = Task { await relay.run() }
        if waitsUntilListening { try await within(.seconds(30)) { try await relay.waitUntilListening() } }
    }

    /// Listening again after having lost a connection. (Disconnects are
    /// counted in the same step that clears the listening state.)
    var reconnected: Bool { relay.statistics.disconnects >= 1 && relay.isListening }

    func stop() async {
        task.cancel()
        await task.value
    }
}

/// Collects hub notifications of some names, in delivery order.
final class Inbox: Sendable {
    private let notes = LockedState<[HubNotification]>([])

    init(_ names: NotificationHub.Name..., from sender: AnyObject? = nil) {
        for name in names {
            // A hub registration is refused only when out of memory.
            try! NotificationHub.default.addObserver(self, name: name, object: sender) { inbox, note in
                inbox.notes.withLock { $0.append(note) }
            }
        }
    }

    deinit { NotificationHub.default.removeObserver(self) }

    var all: [HubNotification] { notes.withLock { $0 } }
    var count: Int { notes.withLock { $0.count } }

    func values(_ key: String) -> [Int] { all.compactMap { $0.userInfo[key] as? Int } }
}

struct DeadlineExceeded: Error, CustomStringConvertible {
    let what: String
    var description: String { "deadline exceeded waiting for \(what)" }
}

/// Waits (polling) until `condition` holds; fails after a generous `deadline`.
/// Never asserts how long it took.
func eventually(
    _ what: String, deadline: Duration = .seconds(60), _ condition: () -> Bool
) async throws {
    let clock = ContinuousClock()
    let end = clock.now + deadline
    while !condition() {
        guard clock.now < end else { throw DeadlineExceeded(what: what) }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Runs `body`, failing if it has not finished after `deadline`.
func within<T: Sendable>(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: deadline)
            return nil
        }
        defer { group.cancelAll() }
        guard let finished = try await group.next(), let value = finished else {
            throw DeadlineExceeded(what: "a task")
        }
        return value
    }
}

/// Sends `payloads` on `channel` with a plain PostgresNIO connection: another
/// client of the same database, which the relay must not trust.
func notifyRaw(_ payloads: [String], on channel: RelayChannel) async throws {
    try await withRawConnection { connection in
        for payload in payloads {
            _ = try await connection.query("SELECT pg_notify(\(channel.name), \(payload))", logger: TestServer.quietLogger)
        }
    }
}

/// Ends the server sessions of the connections named `applicationName`, as
/// an administrator or a network failure would.
func terminateBackends(of applicationName: String) async throws {
    try await withRawConnection { connection in
        _ = try await connection.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(applicationName)",
            logger: TestServer.quietLogger)
    }
}

/// Runs `sql` once on a plain PostgresNIO connection (one statement may
/// notify many times: `SELECT count(pg_notify(…)) FROM generate_series(…)`;
/// aggregate to one row, since the rows are not read).
func executeRaw(_ sql: String) async throws {
    try await withRawConnection { connection in
        _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestServer.quietLogger)
    }
}

/// `text` as a SQL string literal (single quotes doubled; no backslash escapes).
func sqlLiteral(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
}

/// Records every log entry, for tests that read what the relay logged.
final class LogRecorder: Sendable {
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
        /// The entry as a line-oriented handler prints it: message, then `key=value` pairs.
        var rendered: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }

    private let entries = LockedState<[Entry]>([])

    var all: [Entry] { entries.withLock { $0 } }

    func logger(level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: "SwiftKVORelayTests.recorded") { _ in Handler(recorder: self) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            merged.merge(event.metadata ?? [:]) { $1 }
            recorder.entries.withLock { $0.append(Entry(level: event.level, message: "\(event.message)", metadata: merged)) }
        }
    }
}

func withRawConnection(_ body: (PostgresConnection) async throws -> Void) async throws {
    let connection = try await PostgresConnection.connect(
        configuration: try TestServer.connection(), id: 0, logger: TestServer.quietLogger)
    do {
        try await body(connection)
    } catch {
        try? await connection.close()
        throw error
    }
    try await connection.close()
}

final class Flags: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["checkout": \Flags.checkout, "banner": \Flags.banner] }
    @Observed var checkout = false
    @Observed var banner = ""
}
#endif

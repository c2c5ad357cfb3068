#if Relay
import Foundation
import Logging
import NIOCore
import PostgresNIO
import SwiftKVO

// The state table on PostgreSQL (RelayStateTable documents the schema).
//
// A write of replicated properties is one statement with the NOTIFYs: a
// data-modifying WITH (an upsert, which PostgreSQL runs to completion whether
// or not the rest of the statement reads it) before the `pg_notify` SELECT,
// so the row and the notification commit together or not at all. An
// instance that LISTENs and then reads the table therefore misses nothing:
// a write committed before its LISTEN is in the table, one committed after
// is notified to it.
//
// The table is made (if missing) and checked once per connection, the first
// time the connection writes or reads state; until then, and on a
// connection where it cannot be used, writes go out without it. Nothing
// waits on a closing connection: a query written as it closes may never be
// answered (see Publisher), so whatever waits for the table or for a read
// is released by the connection's close.

extension PostgresTransport.Publisher: RelayStatePublisher {
    /// Whether a table can be used on this connection.
    enum TableAccess: Sendable {
        case usable
        /// It exists and is not the relay's, or it could not be made (logged).
        case unusable
        /// The connection closed first.
        case closed
        /// Checking it failed for a reason that may pass (a timeout, a lock,
        /// resources): not remembered, the next use checks again.
        case failed(any Error)
    }

    /// `table`'s access on this connection, once known.
    enum TableStatus {
        case checking([@Sendable (TableAccess) -> Void])
        case known(TableAccess)
    }

    /// Each table's status on this connection, and whether it closed.
    struct TableStatuses {
        var byName: [String: TableStatus] = [:]
        var closed = false
    }

    func publish(
        _ messages: [String], recording rows: [RelayStateRow], in table: RelayStateTable, horizon: Int64,
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        withTable(table) { access in
            switch access {
            case .usable: break
            case .unusable, .closed: return self.publish(messages, completion: completion)
            case .failed(let error): return completion(.failure(error))
            }
            self.publish(messages, statement: { self.statement(messages, rows: rows, in: table, horizon: horizon) }) {
                result in
                // The table changed under the relay (a column or a privilege
                // gone): send the messages alone rather than fail the
                // connection. Anything else (a deadlock, a timeout, the
                // session ending) fails it: the messages go again, rows too.
                if case .failure(let error) = result, Self.isSchemaError(error) {
                    self.logger.error(
                        "relay could not write its state table; sending without it",
                        metadata: [
                            "table": "\(table.name)",
                            "error": "\(Wire.loggableError(RelayErrorDescription.describe(error)))",
                        ])
                    self.markUnusable(table)
                    return self.publish(messages, completion: completion)
                }
                completion(result)
            }
        }
    }

    func loadState(
        of names: [String], from table: RelayStateTable, maximumMessageBytes: Int, maximumRows: Int
    ) async throws -> [RelayStateRow] {
        let access = await withCheckedContinuation { continuation in
            withTable(table) { continuation.resume(returning: $0) }
        }
        switch access {
        case .usable: break
        case .unusable: throw RelayStateTableError.unavailable(table, "see the error logged when it was checked")
        case .closed: throw PostgresTransportError.connectionClosed
        case .failed(let error): throw error
        }
        let query: PostgresQuery = """
            SELECT name, entry, stamp, instance, \
            CASE WHEN octet_length(message) <= \(maximumMessageBytes) THEN message END, octet_length(message) \
            FROM \(unescaped: table.quoted) WHERE channel = \(channel.name) AND name = ANY(\(names)::text[]) \
            LIMIT \(maximumRows)
            """
        do {
            return try await read(query)
        } catch where Self.isSchemaError(error) {
            // Not the relay's table after all: written and read without it from now on.
            markUnusable(table)
            throw RelayStateTableError.unavailable(table, RelayErrorDescription.describe(error))
        }
    }

    func resign(_ rows: [(row: RelayStateRow, message: String)], in table: RelayStateTable) async throws {
        guard !rows.isEmpty else { return }
        // Matched on the whole message read: it names the writer and the
        // stamp, so a row written since is never overwritten.
        let query: PostgresQuery = """
            UPDATE \(unescaped: table.quoted) AS s SET message = w.m \
            FROM unnest(\(rows.map { $0.row.name })::text[], \(rows.map { $0.row.entry })::text[], \
            \(rows.map { $0.row.message ?? "" })::text[], \(rows.map { $0.message })::text[]) AS w(n, e, o, m) \
            WHERE s.channel = \(channel.name) AND s.name = w.n AND s.entry = w.e AND s.message = w.o
            """
        try await untilClosed {
            _ = try await self.connection.query(query, logger: self.logger)
        }
    }

    private func read(_ query: PostgresQuery) async throws -> [RelayStateRow] {
        try await untilClosed {
            var rows: [RelayStateRow] = []
            let result = try await self.connection.query(query, logger: self.logger)
            for try await (name, entry, stamp, instance, message, bytes) in result.decode(
                (String?, String?, Int64?, String?, String?, Int?).self)
            {
                rows.append(
                    RelayStateRow(
                        name: name ?? "", entry: entry ?? "", stamp: stamp ?? -1, instance: instance ?? "",
                        message: message, messageBytes: bytes ?? 0))
            }
            return rows
        }
    }

    /// Whether `error` says the table is not what the relay needs, for good:
    /// a column, a type or a privilege wrong or gone (SQLSTATE classes 42
    /// and 22). Not a deadlock, a timeout, resources or the session ending,
    /// which may pass.
    private static func isSchemaError(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server, error.serverInfo?[.severity] == "ERROR" else {
            return false
        }
        return ["42", "22"].contains(error.serverInfo?[.sqlState]?.prefix(2) ?? "")
    }

    /// `body`'s result, or ``PostgresTransportError/connectionClosed`` as
    /// soon as the connection closes, whichever comes first. (`body` may
    /// then go on, unanswered, on a task of its own.)
    private func untilClosed<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let resumed = LockedState(false)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let finish = { @Sendable (result: Result<T, any Error>) in
                guard resumed.withLock({ resumed in
                    defer { resumed = true }
                    return !resumed
                }) else { return }
                continuation.resume(with: result)
            }
            Task {
                do {
                    finish(.success(try await body()))
                } catch {
                    finish(.failure(error))
                }
            }
            connection.closeFuture.whenComplete { _ in finish(.failure(PostgresTransportError.connectionClosed)) }
        }
    }

    /// The upsert of `rows` and the notifications of `messages`, one
    /// statement. One row, or one message, is bound as plain parameters
    /// rather than arrays: PostgreSQL plans that form in about two thirds of
    /// the time (pgbench, unnamed statements), and it is the common case,
    /// one assignment per statement.
    private func statement(_ messages: [String], rows: [RelayStateRow], in table: RelayStateTable, horizon: Int64)
        -> EventLoopFuture<PostgresQueryMetadata>
    {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: 512, interpolationCount: 8)
        sql.appendLiteral("WITH state AS (INSERT INTO ")
        sql.appendInterpolation(unescaped: table.quoted)
        sql.appendLiteral(" AS s (channel, name, entry, stamp, instance, message) ")
        if rows.count == 1 {
            let row = rows[0]
            sql.appendLiteral("VALUES (")
            sql.appendInterpolation(channel.name)
            sql.appendLiteral(", ")
            sql.appendInterpolation(row.name)
            sql.appendLiteral(", ")
            sql.appendInterpolation(row.entry)
            sql.appendLiteral(", ")
            sql.appendInterpolation(row.stamp)
            sql.appendLiteral(", ")
            sql.appendInterpolation(row.instance)
            sql.appendLiteral(", ")
            sql.appendInterpolation(row.message ?? "")
            sql.appendLiteral(") ")
        } else {
            sql.appendLiteral("SELECT ")
            sql.appendInterpolation(channel.name)
            sql.appendLiteral(", w.n, w.e, w.c, w.o, w.m FROM unnest(")
            sql.appendInterpolation(rows.map(\.name))
            sql.appendLiteral("::text[], ")
            sql.appendInterpolation(rows.map(\.entry))
            sql.appendLiteral("::text[], ")
            sql.appendInterpolation(rows.map(\.stamp))
            sql.appendLiteral("::int8[], ")
            sql.appendInterpolation(rows.map(\.instance))
            sql.appendLiteral("::text[], ")
            sql.appendInterpolation(rows.map { $0.message ?? "" })
            sql.appendLiteral("::text[]) AS w(n, e, c, o, m) ")
        }
        sql.appendLiteral(
            "ON CONFLICT (channel, name, entry) DO UPDATE SET stamp = excluded.stamp, instance = excluded.instance, "
                + "message = excluded.message, updated_at = now() "
                + "WHERE (s.stamp, s.instance) < (excluded.stamp, excluded.instance) OR s.stamp > ")
        sql.appendInterpolation(horizon)
        sql.appendLiteral(") SELECT pg_notify(")
        sql.appendInterpolation(channel.name)
        if messages.count == 1 {
            sql.appendLiteral(", ")
            sql.appendInterpolation(messages[0])
            sql.appendLiteral(")")
        } else {
            sql.appendLiteral(", m) FROM unnest(")
            sql.appendInterpolation(messages)
            sql.appendLiteral("::text[]) WITH ORDINALITY AS batch(m, i) ORDER BY i")
        }
        return connection.query(PostgresQuery(stringInterpolation: sql), logger: logger) { _ in }
    }

    // MARK: Making and checking the table

    /// Calls `body` with whether `table` can be used on this connection:
    /// at once if known, else once it has been checked (and made if
    /// missing), or the connection closed.
    private func withTable(_ table: RelayStateTable, _ body: @escaping @Sendable (TableAccess) -> Void) {
        enum Next {
            case call(TableAccess)
            case wait
            case check
        }
        let next: Next = tables.withLock { tables in
            if tables.closed { return .call(.closed) }
            switch tables.byName[table.name] {
            case .known(let access): return .call(access)
            case .checking(var waiting):
                waiting.append(body)
                tables.byName[table.name] = .checking(waiting)
                return .wait
            case nil:
                tables.byName[table.name] = .checking([body])
                return .check
            }
        }
        switch next {
        case .call(let access): body(access)
        case .wait: break
        case .check:
            Task {
                resolve(table, await self.prepare(table))
            }
        }
    }

    /// Records `table`'s access, unless known already (a failure is not:
    /// the next use checks again), and calls those waiting for it.
    private func resolve(_ table: RelayStateTable, _ access: TableAccess) {
        let waiting = tables.withLock { tables -> [@Sendable (TableAccess) -> Void] in
            guard case .checking(let waiting) = tables.byName[table.name] else { return [] }
            if case .failed = access { tables.byName[table.name] = nil } else { tables.byName[table.name] = .known(access) }
            return waiting
        }
        for waiter in waiting { waiter(access) }
    }

    private func markUnusable(_ table: RelayStateTable) {
        tables.withLock { $0.byName[table.name] = .known(.unusable) }
    }

    /// The connection closed: tables being checked are closed to those waiting, and to any later.
    func closeTables() {
        let waiting = tables.withLock { tables -> [@Sendable (TableAccess) -> Void] in
            var waiting: [@Sendable (TableAccess) -> Void] = []
            for case .checking(let those) in tables.byName.values { waiting += those }
            tables.byName.removeAll()
            tables.closed = true
            return waiting
        }
        for waiter in waiting { waiter(.closed) }
    }

    /// The comment that marks a table as the relay's.
    static let mark = "SwiftKVORelay state table, format 2"
    /// The mark of the format before entries: upgraded in place (`upgrade(_:)`).
    static let markBeforeEntries = "SwiftKVORelay state table, format 1"

    /// Makes `table` if it is missing, upgrades it if it is of format 1;
    /// whether it can be used.
    private func prepare(_ table: RelayStateTable) async -> TableAccess {
        func notUsed(_ reason: String) -> TableAccess {
            logger.error(
                "relay state table not used",
                metadata: ["table": "\(table.name)", "error": "\(Wire.loggableError(reason))"])
            return .unusable
        }
        do {
            switch try await inspect(table) {
            case .ours: return .usable
            case .foreign: return notUsed("\(RelayStateTableError.notCreatedByTheRelay(table))")
            case .beforeEntries:
                try await upgrade(table)
                guard try await inspect(table) == .ours else { return notUsed("its upgrade to format 2 did not take") }
                logger.info("relay upgraded its state table to format 2", metadata: ["table": "\(table.name)"])
                return .usable
            case .missing:
                try await create(table)
                guard try await inspect(table) == .ours else {
                    return notUsed("\(RelayStateTableError.notCreatedByTheRelay(table))")
                }
                logger.info("relay created its state table", metadata: ["table": "\(table.name)"])
                return .usable
            }
        } catch where Self.isSchemaError(error) {
            return notUsed("\(RelayErrorDescription.describe(error))")
        } catch {
            logger.warning(
                "relay could not check its state table",
                metadata: [
                    "table": "\(table.name)",
                    "error": "\(Wire.loggableError(RelayErrorDescription.describe(error)))",
                ])
            return .failed(error)
        }
    }

    private enum Found { case missing, ours, beforeEntries, foreign }

    private func inspect(_ table: RelayStateTable) async throws -> Found {
        let rows = try await connection.query(
            "SELECT to_regclass(\(table.quoted)) IS NOT NULL, obj_description(to_regclass(\(table.quoted)), 'pg_class')",
            logger: logger)
        for try await (exists, comment) in rows.decode((Bool, String?).self) {
            guard exists else { return .missing }
            switch comment {
            case Self.mark: return .ours
            case Self.markBeforeEntries: return .beforeEntries
            default: return .foreign
            }
        }
        return .missing
    }

    /// A dollar-quote tag `table`'s name does not contain (names cannot
    /// contain a double quote, so a quoted identifier cannot end early either).
    private static func tag(for table: RelayStateTable) -> String {
        var tag = "$relay$"
        var counter = 0
        while table.name.contains(tag) {
            counter += 1
            tag = "$relay\(counter)$"
        }
        return tag
    }

    /// Format 1 to 2 in one block: the `entry` column (`''`, the whole value,
    /// for every row there), the primary key over it, the new mark. It does
    /// nothing if another session upgraded the table first.
    private func upgrade(_ table: RelayStateTable) async throws {
        let tag = Self.tag(for: table)
        // The quoted name as a string inside the block: dollar-quoted too,
        // so no character of the name can end it.
        var inner = "$name$"
        while table.name.contains(inner) || inner == tag { inner = "$" + "n" + inner.dropFirst() }
        let literal = inner + table.quoted + inner
        let sql = """
            DO \(tag) BEGIN
              ALTER TABLE \(table.quoted) ADD COLUMN entry text COLLATE "C" NOT NULL DEFAULT '';
              EXECUTE (SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', \(literal), conname)
                       FROM pg_constraint WHERE conrelid = to_regclass(\(literal)) AND contype = 'p');
              ALTER TABLE \(table.quoted) ADD PRIMARY KEY (channel, name, entry);
              COMMENT ON TABLE \(table.quoted) IS '\(Self.mark)';
            EXCEPTION WHEN duplicate_column THEN NULL;
            END \(tag)
            """
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }

    /// `CREATE TABLE` and its mark in one block, which does nothing if
    /// another session made a table of that name first.
    private func create(_ table: RelayStateTable) async throws {
        let tag = Self.tag(for: table)
        let sql = """
            DO \(tag) BEGIN
              CREATE TABLE \(table.quoted) (
                channel    text NOT NULL,
                name       text NOT NULL,
                entry      text COLLATE "C" NOT NULL DEFAULT '',
                stamp      bigint NOT NULL,
                instance   text COLLATE "C" NOT NULL,
                message    text NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (channel, name, entry)
              );
              COMMENT ON TABLE \(table.quoted) IS '\(Self.mark)';
            EXCEPTION WHEN duplicate_table OR unique_violation THEN NULL;
            END \(tag)
            """
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }
}
#endif

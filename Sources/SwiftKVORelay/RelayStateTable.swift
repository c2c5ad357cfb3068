#if Relay
/// The table in which a relay keeps the current value of each replicated
/// property: a PostgreSQL table name, validated once.
///
/// Every write of a replicated property updates the table in the same
/// transaction as its `NOTIFY`; an instance reads it when it starts and after
/// any gap (see ``Relay/replicate(_:of:as:merging:isolation:)``). The relay creates the table
/// when it is missing, marked as its own by a comment, and uses a table of
/// that name only if it carries the mark: it never drops a table, alters
/// none but its own of format 1 (see below),
/// and never writes to one it did not create.
///
/// The schema (one row per channel, replicated name and entry — the whole
/// value, a dictionary key, a set member or a writer, see ``ReplicationPolicy``):
///
/// ```sql
/// CREATE TABLE "swiftkvo_relay_state" (
///     channel    text NOT NULL,              -- the relay's channel
///     name       text NOT NULL,              -- the replicated name
///     entry      text COLLATE "C" NOT NULL DEFAULT '',  -- the entry ('' for the whole value)
///     stamp      bigint NOT NULL,            -- the last writer's clock stamp
///     instance   text COLLATE "C" NOT NULL,  -- the last writer's instance id
///     message    text NOT NULL,              -- the write as sent on the channel (signed, if signing is on)
///     updated_at timestamptz NOT NULL DEFAULT now(),
///     PRIMARY KEY (channel, name, entry)
/// );
/// COMMENT ON TABLE "swiftkvo_relay_state" IS 'SwiftKVORelay state table, format 2';
/// ```
///
/// A table of format 1 (no `entry` column) is upgraded in place the first
/// time a relay uses it: its rows become the whole-value entries.
///
/// Like a ``RelayChannel``, the name is sent as a quoted identifier and must
/// be 1 to 63 bytes of UTF-8 with no double quote and no NUL. It names a
/// table in the first schema of the connection's `search_path` (PostgreSQL's
/// rules for an unqualified name). Case matters.
public struct RelayStateTable: Hashable, Sendable, CustomStringConvertible {
    /// The longest name PostgreSQL keeps whole (`NAMEDATALEN - 1`).
    public static let maximumNameBytes = 63

    /// The table every relay uses unless configured otherwise: `swiftkvo_relay_state`.
    public static let `default` = try! RelayStateTable("swiftkvo_relay_state")

    /// The table's name, as the server sees it.
    public let name: String

    /// Validates `name`.
    ///
    /// - Throws: ``RelayError/invalidConfiguration(_:)`` if it is empty,
    ///   longer than ``maximumNameBytes`` bytes, or contains `"` or NUL.
    public init(_ name: String) throws(RelayError) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= Self.maximumNameBytes,
            !bytes.contains(UInt8(ascii: "\"")), !bytes.contains(0)
        else {
            throw .invalidConfiguration(
                "state table name \"\(Wire.loggable(name))\" must be 1 to 63 bytes without \" or NUL")
        }
        self.name = name
    }

    /// The name as a quoted SQL identifier: `"name"`.
    var quoted: String { "\"" + name + "\"" }

    /// The table's name.
    public var description: String { name }
}

/// One row of a state table: the last write of an entry of a replicated name.
struct RelayStateRow: Sendable, Hashable {
    /// The replicated name.
    var name: String
    /// The entry (`""` for the whole value).
    var entry: String
    /// The writer's clock stamp.
    var stamp: Int64
    /// The writer's instance id.
    var instance: String
    /// The message as it was sent on the channel; nil when a row read is
    /// longer than the limit asked for (then it was not read).
    var message: String?
    /// The message's length in bytes.
    var messageBytes: Int
}

/// A publisher whose broker also keeps the current value of each replicated
/// name (``PostgresTransport``'s does, in a table). A relay whose transport's
/// publisher is not one keeps no state: an instance learns a value when
/// someone assigns it.
protocol RelayStatePublisher: RelayPublisher {
    /// Publishes `messages` as ``RelayPublisher/publish(_:completion:)`` does
    /// and, in the same transaction, records each of `rows` in `table` under
    /// the publisher's channel unless the row there is newer (by stamp, then instance id in
    /// byte order) and its stamp is at most `horizon` (a row stamped beyond
    /// it, by a clock far ahead or by another client, is replaced).
    /// `completion` is called exactly once; if the table cannot be used the
    /// messages are published without it (and it is logged).
    func publish(
        _ messages: [String], recording rows: [RelayStateRow], in table: RelayStateTable, horizon: Int64,
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void)

    /// The rows of `names` under the publisher's channel in `table`, creating the table if
    /// it is missing. A row whose message is longer than `maximumMessageBytes`
    /// comes without it. At most `maximumRows` rows are read.
    ///
    /// - Throws: The server's error, or ``RelayStateTableError`` when the
    ///   table cannot be used.
    func loadState(
        of names: [String], from table: RelayStateTable, maximumMessageBytes: Int, maximumRows: Int
    ) async throws -> [RelayStateRow]

    /// Replaces the message of each of `rows` under the publisher's channel
    /// in `table` with its `message`, where the row still holds the message
    /// it was read with (a row written meanwhile is left as it is): the same
    /// write signed again, with the current key.
    func resign(_ rows: [(row: RelayStateRow, message: String)], in table: RelayStateTable) async throws
}

/// Why a state table cannot be used.
enum RelayStateTableError: Error, CustomStringConvertible {
    /// A table of that name exists and is not marked as the relay's.
    case notCreatedByTheRelay(RelayStateTable)
    /// Creating it failed; the description says why.
    case unavailable(RelayStateTable, String)

    var description: String {
        switch self {
        case .notCreatedByTheRelay(let table):
            "a table \(table.quoted) exists and was not created by the relay (it is left alone: configure another stateTable)"
        case .unavailable(let table, let reason): "state table \(table.quoted) is unavailable: \(reason)"
        }
    }
}
#endif

#if Relay
/// The broker channel a relay publishes on and listens to: a PostgreSQL
/// `LISTEN`/`NOTIFY` channel name, validated once.
///
/// The name is sent as a quoted identifier (`LISTEN "name"`) and as a bound
/// parameter (`pg_notify($1, …)`), never spliced into SQL unquoted. So that a
/// name can never leave its quotes, it must be 1 to 63 bytes of UTF-8 (the
/// server's identifier limit; a longer name would be silently truncated) with
/// no double quote and no NUL. Case matters: `"Orders"` and `"orders"` are
/// different channels.
public struct RelayChannel: Hashable, Sendable, CustomStringConvertible {
    /// The longest name PostgreSQL keeps whole (`NAMEDATALEN - 1`).
    public static let maximumNameBytes = 63

    /// The channel's name, as the server sees it.
    public let name: String

    /// Validates `name`.
    ///
    /// - Throws: ``RelayError/invalidChannelName(_:)`` if it is empty, longer
    ///   than ``maximumNameBytes`` bytes, or contains `"` or NUL.
    public init(_ name: String) throws(RelayError) {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= Self.maximumNameBytes,
            !bytes.contains(UInt8(ascii: "\"")), !bytes.contains(0)
        else { throw .invalidChannelName(name) }
        self.name = name
    }

    /// The channel's name.
    public var description: String { name }
}
#endif

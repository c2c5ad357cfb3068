#if Relay
import SwiftKVO

/// Why a relay refused a call. Thrown where the refusal happens: at the post,
/// the registration or the configuration, never later on the wire.
public enum RelayError: Error, Hashable, Sendable {
    /// A post or property value whose encoded message has `bytes` bytes; the
    /// transport carries at most `limit` (PostgreSQL: under 8000). Nothing
    /// was sent: a message is never truncated.
    case payloadTooLarge(bytes: Int, limit: Int)
    /// The user-info value under `key` is not `Encodable`, or failed to encode.
    case notEncodable(key: String)
    /// A channel name that is empty, too long, or contains `"` or NUL.
    case invalidChannelName(String)
    /// The name is already bridged or replicated by this relay.
    case duplicateName(String)
    /// ``Relay/post(name:userInfo:)`` for a name that was never bridged.
    case notBridged(String)
    /// The outgoing queue holds ``RelayConfiguration/outboxCapacity``
    /// messages not yet sent: the broker is unreachable or too slow.
    case outboxFull(capacity: Int)
    /// A configuration value that cannot work (the message says which), such
    /// as an empty or over-long ``RelayConfiguration/instanceID``.
    case invalidConfiguration(String)
    /// SwiftKVO refused the registration the relay needs, e.g. a key path
    /// that is not an `@Observed` property (`KVOError` says why). Nothing
    /// is bridged or replicated.
    case registration(KVOError)
    /// The relay is shutting down gracefully (``Relay/run()`` under a
    /// `ServiceGroup`): it sends what it had queued and takes nothing new.
    case shuttingDown
}

extension RelayError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .payloadTooLarge(let bytes, let limit): "the message has \(bytes) bytes; the transport carries at most \(limit)"
        case .notEncodable(let key): "the user-info value under \"\(key)\" is not Encodable"
        case .invalidChannelName(let name): "invalid channel name \"\(Wire.loggable(name))\""
        case .duplicateName(let name): "\"\(Wire.loggable(name))\" is already bridged or replicated by this relay"
        case .notBridged(let name): "\"\(Wire.loggable(name))\" is not bridged"
        case .outboxFull(let capacity): "the outbox holds \(capacity) unsent messages"
        case .invalidConfiguration(let reason): "invalid configuration: \(reason)"
        case .registration(let error) where error.detail?.contains("a subscript") == true:
            "SwiftKVO cannot observe the key path (\(error)): replicate the whole dictionary or set instead, "
                + "with merging: .perKey(), .counterPerKey() or .perMember(), so that each entry merges on its own"
        case .registration(let error): "SwiftKVO cannot observe the key path: \(error)"
        case .shuttingDown: "the relay is shutting down"
        }
    }
}
#endif

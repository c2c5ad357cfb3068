#if Relay
import Crypto
import Foundation

/// A secret shared by the instances of a service, with the id that names it
/// on the wire.
public struct RelaySigningKey: Sendable {
    /// The key's name, sent with every message it signs (never the secret).
    public let id: String
    let key: SymmetricKey

    /// The shortest secret accepted, in bytes (HMAC-SHA256's block of security).
    public static let minimumSecretBytes = 32

    /// A key named `id` with `secret`.
    ///
    /// - Throws: ``RelayError/invalidConfiguration(_:)`` if `id` is not 1 to
    ///   32 characters of `A-Z a-z 0-9 . _ -`, or `secret` is shorter than
    ///   ``minimumSecretBytes``.
    public init(id: String, secret: some DataProtocol) throws(RelayError) {
        guard (1...32).contains(id.utf8.count),
            id.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else { throw .invalidConfiguration("a signing key id must be 1 to 32 characters of A-Z a-z 0-9 . _ -") }
        guard secret.count >= Self.minimumSecretBytes else {
            throw .invalidConfiguration("signing key \(id): the secret has \(secret.count) bytes, at least 32 are needed")
        }
        self.id = id
        key = SymmetricKey(data: Array(secret))
    }
}

/// Signed messages: every message carries an HMAC-SHA256 under a key the
/// service's instances share, and a receiver drops (and counts) what is
/// unsigned, wrongly signed or replayed.
///
/// The production setting: without it, any client of the database can speak
/// for any instance (see the DocC article's threat model). Keys rotate
/// without downtime: deploy every instance with the new key as ``previous``,
/// then make it ``current`` everywhere (keeping the old one as ``previous``),
/// then remove the old one. While the old key is still a ``previous`` key, an
/// instance that loads a state-table row signed with it signs the row again
/// with ``current``, so no stored value is lost when the old key goes.
///
/// A signature covers the channel's name as well as the message: a message
/// captured on one channel does not verify on another that shares the key.
/// Every key id must be distinct (a relay refuses a configuration where two
/// keys share one, as no message could be told to be under the second).
///
/// Replays are told by sequence, never by age: a receiver drops a copy of a
/// message it has seen however long ago it was sent
/// (``RelayStatistics/droppedDuplicate``), and a message of an incarnation of
/// an instance superseded by a newer one (``RelayStatistics/droppedReplayed``;
/// see the DocC article, *Replays and restarts*). A late read only delays a
/// message. A signed message also carries its send time (wall clock): it
/// decides only whether a message of an instance the receiver does not track
/// may be one of a forgotten instance's, replayed.
public struct RelaySigning: Sendable {
    /// Signs every message sent; accepted on receipt.
    public var current: RelaySigningKey
    /// Also accepted on receipt, never used to sign: keys being rotated in or out.
    public var previous: [RelaySigningKey]
    /// No longer read: how old a received message was allowed to be. A
    /// message is new or a replay by its place in its sender's sequence, so
    /// a message read late is delivered late, never dropped.
    @available(*, deprecated, message: "replays are told by sequence number, not by age; this is not read")
    public var maximumMessageAge: Duration = .seconds(60)

    /// Also accept signatures that do not cover the channel, as relays
    /// before the channel was signed wrote them. Only while upgrading a
    /// service (see the DocC article, *Upgrading signed relays*): such a
    /// signature may have been captured on another channel sharing the key.
    /// A state-table row so signed is signed again, covering its channel,
    /// when loaded.
    public var acceptsSignaturesWithoutChannel = false

    public init(current: RelaySigningKey, previous: [RelaySigningKey] = []) {
        self.current = current
        self.previous = previous
    }

    /// Checks that every key has its own id.
    ///
    /// - Throws: ``RelayError/invalidConfiguration(_:)`` naming the id two
    ///   keys share: a message names its key by id, so the second key could
    ///   never be used.
    public func validate() throws(RelayError) {
        var ids: Set<String> = []
        for key in [current] + previous where !ids.insert(key.id).inserted {
            throw .invalidConfiguration(
                "two signing keys have the id \(key.id): every key, current or previous, needs its own id")
        }
    }

    /// The variable holding the current key, as `<id>:<base64 secret>`.
    public static let keyVariable = "SWIFTKVO_RELAY_SIGNING_KEY"
    /// The variable holding the previous keys, as `<id>:<base64 secret>` separated by commas.
    public static let previousKeysVariable = "SWIFTKVO_RELAY_PREVIOUS_SIGNING_KEYS"
    /// The variable that sets ``acceptsSignaturesWithoutChannel`` when it is `1`
    /// (while upgrading only).
    public static let acceptsSignaturesWithoutChannelVariable = "SWIFTKVO_RELAY_ACCEPT_SIGNATURES_WITHOUT_CHANNEL"

    /// Signing from the environment: ``keyVariable``, ``previousKeysVariable``
    /// and ``acceptsSignaturesWithoutChannelVariable``; nil if ``keyVariable``
    /// is not set.
    ///
    /// - Throws: ``RelayError/invalidConfiguration(_:)`` if a key does not
    ///   parse, two keys share an id (the message names the key id, never
    ///   the secret), or ``acceptsSignaturesWithoutChannelVariable`` is set
    ///   to anything but `0` or `1`.
    public static func environment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(RelayError) -> RelaySigning? {
        guard let current = environment[keyVariable], !current.isEmpty else { return nil }
        var signing = RelaySigning(current: try key(current, variable: keyVariable))
        for entry in (environment[previousKeysVariable] ?? "").split(separator: ",") {
            signing.previous.append(try key(String(entry), variable: previousKeysVariable))
        }
        switch environment[acceptsSignaturesWithoutChannelVariable] ?? "" {
        case "", "0": break
        case "1": signing.acceptsSignaturesWithoutChannel = true
        default: throw .invalidConfiguration("\(acceptsSignaturesWithoutChannelVariable) must be 0 or 1")
        }
        try signing.validate()
        return signing
    }

    private static func key(_ text: String, variable: String) throws(RelayError) -> RelaySigningKey {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let secret = Data(base64Encoded: String(parts[1])) else {
            throw .invalidConfiguration("\(variable): expected <key id>:<base64 secret>")
        }
        return try RelaySigningKey(id: String(parts[0]), secret: secret)
    }

    /// The key named `id`, current or previous.
    func key(id: Substring) -> RelaySigningKey? {
        if current.id == id { return current }
        return previous.first { $0.id == id }
    }

    // MARK: Wire

    // A signed message is the unsigned one with, before its closing brace,
    // `,"k":"<key id>","g":"<64 hex digits>"`: the HMAC-SHA256 of the
    // channel's name (its length in bytes, `:`, the name) followed by every
    // byte before `,"k":`. Relays before the channel was signed wrote `"h"`
    // instead of `"g"`, the HMAC of the message alone; those are accepted
    // only with ``acceptsSignaturesWithoutChannel``.

    /// `message` (a whole JSON object) signed with the current key for `channel`.
    package func sign(_ message: String, channel: RelayChannel) -> String {
        var text = String(message.dropLast())  // the closing brace
        let code = Self.code(Array(text.utf8)[...], channel: channel, key: current.key)
        text += #","k":""# + current.id + #"","g":""#
        text.reserveCapacity(text.utf8.count + 66)
        for byte in code {
            text.unicodeScalars.append(Self.hexDigits[Int(byte >> 4)])
            text.unicodeScalars.append(Self.hexDigits[Int(byte & 0xF)])
        }
        text += "\"}"
        return text
    }

    /// `message` signed as relays before the channel was signed signed it
    /// (`"h"`, the message alone): what an upgrade meets, for tests.
    package func signWithoutChannel(_ message: String) -> String {
        var text = String(message.dropLast())
        let code = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: current.key)
        text += #","k":""# + current.id + #"","h":""#
        for byte in code {
            text.unicodeScalars.append(Self.hexDigits[Int(byte >> 4)])
            text.unicodeScalars.append(Self.hexDigits[Int(byte & 0xF)])
        }
        return text + "\"}"
    }

    /// The HMAC of `channel`'s name, length first, and `signed`.
    private static func code(_ signed: ArraySlice<UInt8>, channel: RelayChannel, key: SymmetricKey)
        -> HMAC<SHA256>.MAC
    {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Array((String(channel.name.utf8.count) + ":" + channel.name).utf8))
        hmac.update(data: signed)
        return hmac.finalize()
    }

    private static let hexDigits: [Unicode.Scalar] = Array("0123456789abcdef".unicodeScalars)

    package enum Verification: Equatable {
        /// Signed by a known key: the message without its signature.
        /// `outdated`: under a previous key, or without the channel; to be
        /// signed again (a state-table row).
        case valid(String, outdated: Bool)
        case unsigned
        case wronglySigned
    }

    /// Checks `payload`'s signature, received on `channel`.
    package func verify(_ payload: String, channel: RelayChannel) -> Verification {
        let bytes = Array(payload.utf8)
        // …,"k":"<id>","g":"<64 hex>"}
        let tail = #"","g":""#.utf8.count + 64 + 2
        guard bytes.count > tail + 8, bytes[bytes.count - 1] == UInt8(ascii: "}"),
            bytes[bytes.count - 2] == UInt8(ascii: "\"")
        else { return .unsigned }
        let hexStart = bytes.count - 66
        let member = Array(bytes[(hexStart - 7)..<hexStart])
        let coversChannel: Bool
        if member == Array(#"","g":""#.utf8) {
            coversChannel = true
        } else if member == Array(#"","h":""#.utf8) {
            coversChannel = false
        } else {
            return .unsigned
        }
        // Find `,"k":"` before the key id (at most 32 bytes back).
        let idEnd = hexStart - 7
        let marker = Array(#","k":""#.utf8)
        var idStart = idEnd
        while idStart > 0, idEnd - idStart <= 32, bytes[idStart - 1] != UInt8(ascii: "\"") { idStart -= 1 }
        let signedEnd = idStart - marker.count
        guard signedEnd > 0, Array(bytes[signedEnd..<idStart]) == marker else { return .unsigned }
        var code = [UInt8]()
        code.reserveCapacity(32)
        var index = hexStart
        while index < hexStart + 64 {
            guard let high = Self.hexValue(bytes[index]), let low = Self.hexValue(bytes[index + 1]) else {
                return .wronglySigned
            }
            code.append(high << 4 | low)
            index += 2
        }
        let id = String(decoding: bytes[idStart..<idEnd], as: UTF8.self)
        guard let key = key(id: Substring(id)) else { return .wronglySigned }
        let signed = bytes[0..<signedEnd]
        if coversChannel {
            // MAC == bytes compares in constant time.
            guard Self.code(signed, channel: channel, key: key.key) == code else { return .wronglySigned }
        } else {
            guard acceptsSignaturesWithoutChannel,
                HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: signed, using: key.key)
            else { return .wronglySigned }
        }
        let outdated = !coversChannel || key.id != current.id
        return .valid(String(decoding: signed, as: UTF8.self) + "}", outdated: outdated)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
#endif

#if Relay
import Foundation
import SwiftKVO

// The relay's messages, one JSON object per broker message (format version 1):
//
//   {"o":"<instance>","i":4711,"s":17,"v":1,"t":"post","n":"orders.placed","u":{"count":3}}
//   {"o":"<instance>","i":4711,"s":18,"v":1,"t":"set","n":"flags.checkout","c":1732480000000123,"x":true}
//
// v: format version; o: the sending instance; i: its incarnation (per relay:
// its start time in milliseconds, shifted left 22 bits, and 22 random bits —
// so an instance restarted with a fixed id starts a new sequence space, which
// receivers order after the earlier one; 0 when absent); s: its sequence
// number (1, 2, 3…, per incarnation, one
// counter for every message it sends); t: "post" (a hub notification, user
// info in u) or "set" (a property entry's value x, with the writer's clock
// stamp c; e names the entry — a dictionary key, a set member, a writer —
// and is absent for the whole value; see ReplicationPolicy).
// A signed message (RelaySigning) ends with its key id and signature:
// …,"k":"<key id>","g":"<hex HMAC-SHA256 of the channel's name and
// everything before ,"k">"}, so every member above is under it, and the
// channel too (older relays wrote "h", without the channel).
// A receiver decodes the envelope first, then the
// body with the types registered for the name: nothing from the wire is
// trusted before it has decoded as what it claims to be. A message is decoded
// in one pass: the envelope first, then the body as the name's registration
// says (looked up while decoding). Receivers accept the members in any
// order; senders write them in the order above, so that a relay recognizes
// its own messages by their first bytes, `{"o":"<instance>","i":<incarnation>,"s":`.
//
// Sending is on every post's path, so messages are written directly: the
// envelope always, and user info whose values are all `String`, `Int` or
// `Bool` (other values go through JSONEncoder). Receiving reads such posts
// directly too (WireReading.swift) and decodes everything else with JSONDecoder.

enum Wire {
    static let version = 1
    /// The longest instance id accepted from the wire.
    static let maximumInstanceIDBytes = 128
    /// How deep untyped user info may nest (arrays and objects).
    static let maximumDepth = 32

    /// Whether `id` may name an instance: 1 to ``maximumInstanceIDBytes``
    /// bytes of UTF-8, and nothing an application or a log could misread —
    /// no control or format characters (NUL, ESC, newlines, bidirectional
    /// overrides, zero-width characters), no line or paragraph separators,
    /// no unassigned or private-use code points.
    static func isValidInstanceID(_ id: String) -> Bool {
        let bytes = id.utf8.count
        guard bytes > 0, bytes <= maximumInstanceIDBytes else { return false }
        return id.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .privateUse, .surrogate:
                false
            default:
                true
            }
        }
    }

    /// `text` from outside (the wire, a name, a server's error) as a log
    /// metadata value: at most `limit` characters, and everything but
    /// letters, digits, marks, symbols and `- . _ : / @ + # , ; ( ) ! ? * & % $ ~ '`
    /// escaped as `\u{…}` — spaces, brackets, `=`, quotes and backslashes
    /// included (with `keepingSpaces`, for prose such as an error's
    /// description, plain spaces stay). So a value can never end a log line,
    /// colour a terminal, nor pass for the line's own structure (`key=value`
    /// pairs, a bracketed list, the words of another message).
    static func loggable(_ text: String, limit: Int = 128, keepingSpaces: Bool = false) -> String {
        var output = ""
        for (offset, scalar) in text.unicodeScalars.enumerated() {
            guard offset < limit else {
                output += "…"
                break
            }
            if isPlainInLogs(scalar) || (keepingSpaces && scalar == " ") {
                output.unicodeScalars.append(scalar)
            } else {
                output += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return output
    }

    /// An error's description as a log metadata value: ``loggable(_:limit:keepingSpaces:)``
    /// keeping spaces, up to 1024 characters.
    static func loggableError(_ description: String) -> String {
        loggable(description, limit: 1024, keepingSpaces: true)
    }

    private static func isPlainInLogs(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9": return true
            default: return "-._:/@+#,;()!?*&%$~'".unicodeScalars.contains(scalar)
            }
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber,
            .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
            return true
        default:
            return false
        }
    }

    enum Kind: String, Decodable {
        case post
        case set
    }

    /// What every message starts with.
    struct Envelope {
        var v: Int
        var o: String
        var i: UInt64 = 0
        var s: UInt64
        /// The send time, wall-clock milliseconds: in signed messages only.
        var w: UInt64? = nil
        var t: Kind
        var n: String
    }

    // MARK: Writing

    /// What every message of `instance`'s `incarnation` starts with, up to its sequence number.
    static func prefix(instance: String, incarnation: UInt64) -> String {
        var prefix = #"{"o":"#
        appendQuoted(instance, to: &prefix)
        prefix += #","i":"# + String(incarnation) + #","s":"#
        return prefix
    }

    /// A whole message: `prefix` (``prefix(instance:)``), the sequence number,
    /// then `body` (``postBody(name:userInfo:)`` or ``setBody(name:stamp:value:)``).
    static func message(prefix: String, sequence: UInt64, body: String) -> String {
        prefix + String(sequence) + body
    }

    /// A post's members after the sequence number: `,"v":1,"t":"post","n":…,"u":{…}}`.
    /// The relay's own origin entry stays local.
    static func postBody(name: String, userInfo: [String: any Sendable]) throws(RelayError) -> String {
        var body = #","v":1,"t":"post","n":"#
        appendQuoted(name, to: &body)
        body += #","u":"#
        if let direct = directUserInfo(userInfo) {
            body += direct
        } else {
            body += try encoded(EncodableUserInfo(values: userInfo))
        }
        body += "}"
        return body
    }

    /// A property value's members after the sequence number:
    /// `,"v":1,"t":"set","n":…[,"e":…],"c":<stamp>,"x":<value>}`.
    static func setBody<Value: Encodable>(
        name: String, entry: String = "", stamp: UInt64, value: Value
    ) throws(RelayError) -> String {
        var body = #","v":1,"t":"set","n":"#
        appendQuoted(name, to: &body)
        if !entry.isEmpty {
            body += #","e":"#
            appendQuoted(entry, to: &body)
        }
        body += #","c":"# + String(stamp) + #","x":"#
        if let direct = directValue(value) {
            body += direct
        } else {
            // An array is a top-level JSON text whatever the value is: strip its brackets.
            let array = try encoded([value])
            body += array.dropFirst().dropLast()
        }
        body += "}"
        return body
    }

    /// `values` as a JSON object if every value is a `String`, `Int` or `Bool`; nil otherwise.
    private static func directUserInfo(_ values: [String: any Sendable]) -> String? {
        var object = "{"
        for (key, value) in values where key != RelayOrigin.userInfoKey {
            if object.utf8.count > 1 { object += "," }
            appendQuoted(key, to: &object)
            object += ":"
            guard let direct = directValue(value) else { return nil }
            object += direct
        }
        object += "}"
        return object
    }

    /// A `String`, `Int` or `Bool` as JSON; nil for any other value.
    private static func directValue(_ value: Any) -> String? {
        switch value {
        case let string as String:
            var quoted = ""
            appendQuoted(string, to: &quoted)
            return quoted
        case let int as Int: return String(int)
        case let bool as Bool: return bool ? "true" : "false"
        default: return nil
        }
    }

    /// Appends `string` as a JSON string: quotes, backslashes and control
    /// characters escaped, everything else as it is (slashes too, as JSONEncoder
    /// with `.withoutEscapingSlashes` writes them).
    static func appendQuoted(_ string: String, to output: inout String) {
        output += "\""
        guard string.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) else {
            output += string
            output += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += #"\""#
            case "\\": output += #"\\"#
            case "\n": output += #"\n"#
            case "\r": output += #"\r"#
            case "\t": output += #"\t"#
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += #"\u"# + String(repeating: "0", count: 4 - hex.utf8.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// `value` through JSONEncoder, as UTF-8 text.
    private static func encoded(_ value: some Encodable) throws(RelayError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch let error as RelayError {
            throw error
        } catch {
            throw .notEncodable(key: "")
        }
    }

    /// What a name is registered as, for decoding its body.
    enum Registration {
        case bridge(NotificationHub.Name, UserInfoSchema)
        case replication(any Replicating)
    }

    /// Finds a name's registration while a message is decoded.
    struct Resolver: @unchecked Sendable {  // holds a @Sendable closure; unchecked for the userInfo slot
        let registration: @Sendable (Kind, String) -> Registration?

        static let codingKey = CodingUserInfoKey(rawValue: "SwiftKVORelay.resolver")!
    }

    /// A whole incoming message. A body that does not decode as its name's
    /// types is `.wrongType`, not an error: the envelope is still good (its
    /// sequence number counts).
    struct Incoming: Decodable {
        enum Body {
            case post(NotificationHub.Name, [String: any Sendable])
            case set(any Replicating, entry: String, stamp: UInt64, value: any Sendable)
            case unknownName
            case wrongType
        }

        var envelope: Envelope
        var body: Body

        init(envelope: Envelope, body: Body) {
            self.envelope = envelope
            self.body = body
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: DynamicKey.self)
            envelope = Envelope(
                v: try container.decode(Int.self, forKey: DynamicKey("v")),
                o: try container.decode(String.self, forKey: DynamicKey("o")),
                i: try container.decodeIfPresent(UInt64.self, forKey: DynamicKey("i")) ?? 0,
                s: try container.decode(UInt64.self, forKey: DynamicKey("s")),
                w: try container.decodeIfPresent(UInt64.self, forKey: DynamicKey("w")),
                t: try container.decode(Kind.self, forKey: DynamicKey("t")),
                n: try container.decode(String.self, forKey: DynamicKey("n")))
            let resolver = decoder.userInfo[Resolver.codingKey] as? Resolver
            switch resolver?.registration(envelope.t, envelope.n) {
            case nil:
                body = .unknownName
            case .bridge(let name, let schema):
                do {
                    let userInfo = try DecodedUserInfo(from: container.superDecoder(forKey: DynamicKey("u")), schema: schema)
                    body = .post(name, userInfo.values)
                } catch {
                    body = .wrongType
                }
            case .replication(let replication):
                do {
                    let stamp = try container.decode(UInt64.self, forKey: DynamicKey("c"))
                    let entry = try container.decodeIfPresent(String.self, forKey: DynamicKey("e")) ?? ""
                    let value = try replication.decode(
                        entry: entry, from: container.superDecoder(forKey: DynamicKey("x")))
                    body = .set(replication, entry: entry, stamp: stamp, value: value)
                } catch {
                    body = .wrongType
                }
            }
        }
    }
}

struct DynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A post's user info on its way out through JSONEncoder: every value must
/// be `Encodable`. The relay's own origin entry stays local.
struct EncodableUserInfo: Encodable {
    let values: [String: any Sendable]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: DynamicKey.self)
        for (key, value) in values where key != RelayOrigin.userInfoKey {
            guard let value = value as? any Encodable else { throw RelayError.notEncodable(key: key) }
            do {
                try container.encode(value, forKey: DynamicKey(key))
            } catch {
                throw RelayError.notEncodable(key: key)
            }
        }
    }
}

/// The types a bridged name's user-info keys decode as (``Relay/bridge(_:userInfoTypes:)``).
struct UserInfoSchema: @unchecked Sendable {  // metatypes only: immutable, safe to share
    let types: [String: any (Decodable & Sendable).Type]
}

/// A post's user info on its way in. With a schema, every key must be in it
/// and decode as its type; without, JSON maps to Bool, Int, Double, String,
/// `[any Sendable]` and `[String: any Sendable]` (null entries are left out),
/// nested at most ``Wire/maximumDepth`` deep.
struct DecodedUserInfo {
    var values: [String: any Sendable] = [:]

    init(from decoder: any Decoder, schema: UserInfoSchema) throws {
        let container = try decoder.container(keyedBy: DynamicKey.self)
        for key in container.allKeys {
            if !schema.types.isEmpty {
                guard let type = schema.types[key.stringValue] else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container, debugDescription: "key not in the bridged name's types")
                }
                values[key.stringValue] = try Self.decode(type, from: container, forKey: key)
            } else if let value = try container.decode(UntypedValue.self, forKey: key).value {
                values[key.stringValue] = value
            }
        }
    }

    private static func decode<T: Decodable & Sendable>(
        _ type: T.Type, from container: KeyedDecodingContainer<DynamicKey>, forKey key: DynamicKey
    ) throws -> any Sendable {
        try container.decode(type, forKey: key)
    }
}

/// One JSON value without a declared type, as a Swift value.
struct UntypedValue: Decodable {
    let value: (any Sendable)?

    init(from decoder: any Decoder) throws {
        // The path starts with the user info ("u") and the value's key: what
        // follows are the arrays and objects this value is nested in.
        guard decoder.codingPath.count - 2 <= Wire.maximumDepth else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "nested too deep"))
        }
        if var array = try? decoder.unkeyedContainer() {
            var values: [any Sendable] = []
            while !array.isAtEnd {
                if let value = try array.decode(UntypedValue.self).value { values.append(value) }
            }
            value = values
        } else if let object = try? decoder.container(keyedBy: DynamicKey.self) {
            var values: [String: any Sendable] = [:]
            for key in object.allKeys {
                if let value = try object.decode(UntypedValue.self, forKey: key).value {
                    values[key.stringValue] = value
                }
            }
            value = values
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                value = nil
            } else if let bool = try? single.decode(Bool.self) {
                value = bool
            } else if let int = try? single.decode(Int.self) {
                value = int
            } else if let double = try? single.decode(Double.self) {
                value = double
            } else {
                value = try single.decode(String.self)
            }
        }
    }
}
#endif

import Foundation
import SwiftKVO

// The relay's messages, one JSON object per broker message (format version 1):
//
//   {"v":1,"o":"<instance>","s":17,"t":"post","n":"orders.placed","u":{"count":3}}
//   {"v":1,"o":"<instance>","s":18,"t":"set","n":"flags.checkout","c":1732480000000123,"x":true}
//
// v: format version; o: the sending instance; s: its sequence number (1, 2, 3…,
// per instance, one counter for every message it sends); t: "post" (a hub
// notification, user info in u) or "set" (a property value x, with the
// writer's clock stamp c). A receiver decodes the envelope first, then the
// body with the types registered for the name: nothing from the wire is
// trusted before it has decoded as what it claims to be. A message is decoded
// in one pass: the envelope first, then the body as the name's registration
// says (looked up while decoding).

enum Wire {
    static let version = 1
    /// The longest instance id accepted from the wire.
    static let maximumInstanceIDBytes = 128
    /// How deep untyped user info may nest (arrays and objects).
    static let maximumDepth = 32

    enum Kind: String, Codable {
        case post
        case set
    }

    /// What every message starts with.
    struct Envelope {
        var v: Int
        var o: String
        var s: UInt64
        var t: Kind
        var n: String
    }

    /// The envelope as encoded, without the sequence number: the relay puts
    /// `"s":N,` in front when it queues the message (so numbers follow queue
    /// order without encoding under its lock).
    struct Header: Encodable {
        var v = Wire.version
        var o: String
        var t: Kind
        var n: String
    }

    /// Room kept for the sequence number: `"s":` + 20 digits + `,`.
    static let sequenceReserve = 25

    /// `message` (an encoded object, `{…}`) with sequence number `sequence` first.
    static func numbered(_ message: String, sequence: UInt64) -> String {
        "{\"s\":\(sequence)," + message.dropFirst()
    }

    struct Post: Encodable {
        var envelope: Header
        var userInfo: EncodableUserInfo

        func encode(to encoder: any Encoder) throws {
            try envelope.encode(to: encoder)
            var container = encoder.container(keyedBy: DynamicKey.self)
            try container.encode(userInfo, forKey: DynamicKey("u"))
        }
    }

    struct Set<Value: Encodable>: Encodable {
        var envelope: Header
        var stamp: UInt64
        var value: Value

        func encode(to encoder: any Encoder) throws {
            try envelope.encode(to: encoder)
            var container = encoder.container(keyedBy: DynamicKey.self)
            try container.encode(stamp, forKey: DynamicKey("c"))
            try container.encode(value, forKey: DynamicKey("x"))
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
            case set(any Replicating, stamp: UInt64, value: any Sendable)
            case unknownName
            case wrongType
        }

        var envelope: Envelope
        var body: Body

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: DynamicKey.self)
            envelope = Envelope(
                v: try container.decode(Int.self, forKey: DynamicKey("v")),
                o: try container.decode(String.self, forKey: DynamicKey("o")),
                s: try container.decode(UInt64.self, forKey: DynamicKey("s")),
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
                    let value = try replication.decodeValue(from: container.superDecoder(forKey: DynamicKey("x")))
                    body = .set(replication, stamp: stamp, value: value)
                } catch {
                    body = .wrongType
                }
            }
        }
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }
}

struct DynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A post's user info on its way out: every value must be `Encodable`.
/// The relay's own origin entry stays local.
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
        guard decoder.codingPath.count <= Wire.maximumDepth else {
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

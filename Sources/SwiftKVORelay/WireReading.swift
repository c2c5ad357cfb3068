#if Relay
// Reading the posts relays write, without JSONDecoder.
//
// Decoding is on every received message's path, and JSONDecoder costs about
// ten times what the rest of the receive path does. `Wire.readPost` reads the
// common case directly: a post whose members are the envelope's and then `u`,
// a flat object of strings, integers and booleans, as `Wire.postBody` writes
// them. It returns nil for anything else — escapes in strings, fractions or
// exponents, nulls, nesting, unknown or repeated members, a key or value the
// name's types do not take as they are — and the relay then decodes the
// payload with JSONDecoder, which decides what the message is (and why it is
// dropped). So for every payload it accepts, the result is the one
// JSONDecoder gives; it only ever declines.

extension Wire {
    /// `payload` as a post of a bridged name, or nil if it is not one in the
    /// plain form this reader takes (see above).
    ///
    /// - Parameter registration: Looks the name up (as ``Resolver`` does).
    static func readPost(_ payload: String, registration: (Kind, String) -> Registration?) -> Incoming? {
        var payload = payload
        return payload.withUTF8 { bytes in
            var reader = Reader(bytes: bytes)
            return reader.post(registration: registration)
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        /// The members of a message, in the order the reader requires them:
        /// `u` last, once the kind and name say how to read it.
        private enum Member: String {
            case o, i, s, w, v, t, n, u
        }

        mutating func post(registration: (Kind, String) -> Registration?) -> Incoming? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var instance: String?
            var incarnation: UInt64?
            var sequence: UInt64?
            var sent: UInt64?
            var version: Int?
            var kind: Kind?
            var name: String?
            var body: Incoming.Body?
            repeat {
                guard let key = string(), take(UInt8(ascii: ":")), let member = Member(rawValue: key) else { return nil }
                switch member {
                case .o:
                    guard instance == nil, let value = string() else { return nil }
                    instance = value
                case .i:
                    guard incarnation == nil, let value = integer(), !value.negative else { return nil }
                    incarnation = value.magnitude
                case .w:
                    guard sent == nil, let value = integer(), !value.negative else { return nil }
                    sent = value.magnitude
                case .s:
                    guard sequence == nil, let value = integer(), !value.negative else { return nil }
                    sequence = value.magnitude
                case .v:
                    guard version == nil, let value = int() else { return nil }
                    version = value
                case .t:
                    guard kind == nil, let value = string().flatMap(Kind.init(rawValue:)) else { return nil }
                    kind = value
                case .n:
                    guard name == nil, let value = string() else { return nil }
                    name = value
                case .u:
                    guard body == nil, kind == .post, let name,
                        case .bridge(let bridged, let schema) = registration(.post, name),
                        let userInfo = userInfo(schema)
                    else { return nil }
                    body = .post(bridged, userInfo)
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")), atEnd, let instance, let sequence, let version, let kind, let name, let body
            else { return nil }
            return Incoming(
                envelope: Envelope(v: version, o: instance, i: incarnation ?? 0, s: sequence, w: sent, t: kind, n: name), body: body)
        }

        /// A flat object of user info, each value as `schema` takes it
        /// (``DecodedUserInfo``), or nil.
        private mutating func userInfo(_ schema: UserInfoSchema) -> [String: any Sendable]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var values: [String: any Sendable] = [:]
            if take(UInt8(ascii: "}")) { return values }
            repeat {
                guard let key = string(), values[key] == nil, take(UInt8(ascii: ":")) else { return nil }
                let value: (any Sendable)?
                if schema.types.isEmpty {
                    value = untyped()
                } else if let type = schema.types[key] {
                    switch ObjectIdentifier(type) {
                    case ObjectIdentifier(String.self): value = string()
                    case ObjectIdentifier(Int.self): value = int()
                    case ObjectIdentifier(Bool.self): value = bool()
                    default: value = nil
                    }
                } else {
                    value = nil
                }
                guard let value else { return nil }
                values[key] = value
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? values : nil
        }

        /// A string, integer or boolean as ``UntypedValue`` maps it, or nil.
        private mutating func untyped() -> (any Sendable)? {
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"), UInt8(ascii: "f"): return bool()
            default: return int()
            }
        }

        // MARK: Tokens

        private var atEnd: Bool {
            mutating get {
                skipSpace()
                return index == bytes.count
            }
        }

        private mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
                default: return
                }
            }
        }

        /// Takes `byte` (after any whitespace) if it is next.
        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// A string without escapes (nor control characters, which JSON forbids raw).
        private mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index - 1]), as: UTF8.self)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                index += 1
            }
            return nil
        }

        /// `-?(0|[1-9][0-9]*)` not followed by a fraction or exponent, within UInt64.
        private mutating func integer() -> (negative: Bool, magnitude: UInt64)? {
            skipSpace()
            let negative = take(UInt8(ascii: "-"))
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                return follows(digits: false) ? nil : (negative, 0)
            }
            var magnitude: UInt64 = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                guard !overflow1, !overflow2 else { return nil }
                magnitude = sum
                index += 1
            }
            return follows(digits: true) ? nil : (negative, magnitude)
        }

        /// Whether a number goes on past its integer part (a fraction, an
        /// exponent, or, after a leading zero, another digit).
        private func follows(digits: Bool) -> Bool {
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return true
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return !digits
            default: return false
            }
        }

        /// An integer within `Int`.
        private mutating func int() -> Int? {
            guard let (negative, magnitude) = integer() else { return nil }
            if negative {
                guard magnitude <= UInt64(Int.max) + 1 else { return nil }
                return magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)
            }
            return magnitude <= UInt64(Int.max) ? Int(magnitude) : nil
        }

        private mutating func bool() -> Bool? {
            skipSpace()
            if matches("true") {
                index += 4
                return true
            }
            if matches("false") {
                index += 5
                return false
            }
            return nil
        }

        private func matches(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            return literal.withUTF8Buffer { literal in
                literal.elementsEqual(UnsafeBufferPointer(rebasing: bytes[index..<index + count]))
            }
        }
    }
}
#endif

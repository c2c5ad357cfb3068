#if Relay
import Foundation
import SwiftKVO
import Testing

@testable import SwiftKVORelay

/// The wire format without a server: what the relay writes directly is what
/// JSONDecoder reads, and the direct reader agrees with JSONDecoder on
/// every payload it accepts.
struct WireTests {
    static let name = NotificationHub.Name("relay.test.wire")
    static let typed = UserInfoSchema(types: ["text": String.self, "n": Int.self, "flag": Bool.self])
    static let untyped = UserInfoSchema(types: [:])

    /// What JSONDecoder makes of `payload`, with `schema` for the name.
    static func decodedByJSONDecoder(_ payload: String, schema: UserInfoSchema) -> Wire.Incoming? {
        let decoder = JSONDecoder()
        decoder.userInfo[Wire.Resolver.codingKey] = Wire.Resolver { kind, name in
            kind == .post && name == Self.name.rawValue ? .bridge(Self.name, schema) : nil
        }
        return try? decoder.decode(Wire.Incoming.self, from: Data(payload.utf8))
    }

    static func readDirectly(_ payload: String, schema: UserInfoSchema) -> Wire.Incoming? {
        Wire.readPost(payload) { kind, name in
            kind == .post && name == Self.name.rawValue ? .bridge(Self.name, schema) : nil
        }
    }

    /// A message's envelope and body as comparable text (user info sorted by key, values with their types).
    static func summary(_ message: Wire.Incoming?) -> String? {
        guard let message else { return nil }
        let envelope = message.envelope
        let head = "\(envelope.v) \(envelope.o) \(envelope.i) \(envelope.s) \(envelope.t) \(envelope.n)"
        switch message.body {
        case .post(let name, let userInfo):
            let values = userInfo.sorted { $0.key < $1.key }.map { "\($0.key)=\(type(of: $0.value)):\($0.value)" }
            return head + " post \(name.rawValue) " + values.joined(separator: ",")
        case .set: return head + " set"
        case .unknownName: return head + " unknown name"
        case .wrongType: return head + " wrong type"
        }
    }

    @Test func writtenPostsReadTheSameDirectlyAndThroughJSONDecoder() throws {
        let texts = [
            "", "plain", #"quote " and backslash \ "#, "slash / stays", "line\nbreak\ttab\r\u{1}\u{1f}",
            "é, 漢字, 🎉", String(repeating: "x", count: 3000),
        ]
        for text in texts {
            for n in [0, -1, 42, Int.max, Int.min] {
                for flag in [true, false] {
                    let userInfo: [String: any Sendable] = [
                        "text": text, "n": n, "flag": flag, RelayOrigin.userInfoKey: RelayOrigin.local,
                    ]
                    let body = try Wire.postBody(name: Self.name.rawValue, userInfo: userInfo)
                    let payload = Wire.message(prefix: Wire.prefix(instance: "instance-a", incarnation: 9), sequence: 7, body: body)
                    for schema in [Self.typed, Self.untyped] {
                        let decoded = try #require(Self.summary(Self.decodedByJSONDecoder(payload, schema: schema)))
                        #expect(decoded.hasSuffix(" post relay.test.wire " + "flag=Bool:\(flag),n=Int:\(n),text=String:\(text)"))
                        let direct = Self.readDirectly(payload, schema: schema)
                        if let direct { #expect(Self.summary(direct) == decoded) }
                        let plain = !text.utf8.contains { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }
                        #expect((direct != nil) == plain, "read directly unless the text has escapes")
                    }
                }
            }
        }
    }

    @Test func userInfoWithOtherValuesGoesThroughJSONEncoder() throws {
        let body = try Wire.postBody(name: Self.name.rawValue, userInfo: ["ratio": 0.5, "list": [1, 2], "text": "a"])
        let payload = Wire.message(prefix: Wire.prefix(instance: "a", incarnation: 9), sequence: 1, body: body)
        #expect(Self.summary(Self.decodedByJSONDecoder(payload, schema: Self.untyped))?.hasSuffix("ratio=Double:0.5,text=String:a") == true)
        #expect(Self.readDirectly(payload, schema: Self.untyped) == nil)  // an array: left to JSONDecoder
    }

    @Test func aPropertyValueIsWrittenAsJSON() throws {
        struct Point: Codable, Equatable { var x: Int, y: Double }
        let body = try Wire.setBody(name: "flags.point", stamp: 12, value: Point(x: 1, y: 2.5))
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(("{\"s\":1" + body).utf8)) as? [String: Any])
        #expect(object["c"] as? Int == 12)
        #expect((object["x"] as? [String: Any])?["x"] as? Int == 1)
        let scalar = try Wire.setBody(name: "flags.on", stamp: 13, value: Optional<Bool>.none)
        #expect(scalar.hasSuffix(#""x":null}"#))
    }

    @Test func theDirectReaderOnlyDeclinesNeverDisagreesWithJSONDecoder() {
        func post(_ userInfo: String, instance: String = "m", sequence: String = "1") -> String {
            #"{"o":"\#(instance)","s":\#(sequence),"v":1,"t":"post","n":"relay.test.wire","u":\#(userInfo)}"#
        }
        let payloads = [
            post(#"{"n":1}"#), post(#"{"n":-0}"#), post(#"{"n":01}"#), post(#"{"n":1.0}"#), post(#"{"n":1e3}"#),
            post(#"{"n":9223372036854775807}"#), post(#"{"n":9223372036854775808}"#), post(#"{"n":-9223372036854775808}"#),
            post(#"{"n":-9223372036854775809}"#), post(#"{"n":"1"}"#), post(#"{"n":true}"#), post(#"{"n":null}"#),
            post(#"{"n":1,"n":2}"#), post(#"{"other":1}"#), post(#"{"text":"a\"b"}"#), post(#"{"text":"\u0041"}"#),
            post(#"{"flag":truex}"#), post(#"{"flag":tru}"#), post(#"{}"#), post(#"[]"#), post(#"{"n":[1]}"#),
            post(#" { "n" : 1 , "flag" : false } "#), post(#"{"n":1}"#, sequence: "-1"), post(#"{"n":1}"#, sequence: "18446744073709551616"),
            post(#"{"n":1}"#) + " ", post(#"{"n":1}"#) + "x", post(#"{"n":1}"#).replacingOccurrences(of: #""v":1"#, with: #""v":1,"v":1"#),
            #"{"s":1,"o":"m","v":1,"t":"post","n":"relay.test.wire","u":{"n":1}}"#,
            #"{"o":"m","s":1,"v":1,"u":{"n":1},"t":"post","n":"relay.test.wire"}"#,
            #"{"o":"m","s":1,"v":1,"t":"set","n":"relay.test.wire","c":1,"x":1}"#,
            #"{"o":"m","s":1,"v":1,"t":"post","n":"no.such.name","u":{}}"#,
            #"{"o":"m","s":1,"v":1,"t":"post","n":"relay.test.wire","u":{"n":1},"extra":2}"#,
            "", "{", "not json", String(repeating: "[", count: 100),
        ]
        var accepted = 0
        for payload in payloads {
            for schema in [Self.typed, Self.untyped] {
                guard let direct = Self.readDirectly(payload, schema: schema) else { continue }
                accepted += 1
                #expect(Self.summary(direct) == Self.summary(Self.decodedByJSONDecoder(payload, schema: schema)), "\(payload)")
            }
        }
        #expect(accepted > 0)
    }

    @Test func ownMessagesStartWithTheInstancesPrefix() throws {
        let prefix = Wire.prefix(instance: #"a "quoted" id"#, incarnation: 9)
        let body = try Wire.postBody(name: "x", userInfo: [:])
        #expect(Wire.message(prefix: prefix, sequence: 3, body: body).hasPrefix(prefix))
        #expect(!Wire.message(prefix: Wire.prefix(instance: "a", incarnation: 9), sequence: 3, body: body).hasPrefix(prefix))
    }
}
#endif

#if Relay
import Foundation
import Logging
import SwiftKVO
import Testing

@testable import SwiftKVORelay

// Issue #22, authenticated messages: with signing on, a client of the
// database without the key can neither speak for an instance nor replay one.
extension RelayTests {
    static func signingKey(_ id: String, _ byte: UInt8) throws -> RelaySigningKey {
        try RelaySigningKey(id: id, secret: [UInt8](repeating: byte, count: 32))
    }

    @Test func signedRelaysDropUnsignedWronglySignedAndReplayedMessages() async throws {
        let channel = try TestServer.freshChannel("signed")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let a = try await RunningRelay(channel: channel) { $0.signing = signing }
        let b = try await RunningRelay(channel: channel) { $0.signing = signing }
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        try a.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("a's signed post") { atB.count == 1 }

        // What a listener on the channel could have captured: a's message 1 (a copy).
        let captured = try a.relay.message(posting: .testEvent, userInfo: ["n": 1], sequence: 1)
        let unsigned = Self.forgedPost("relay.test.event", instance: a.relay.instanceID, sequence: 2, userInfo: #"{"n":66}"#)
        let wrongKey = RelaySigning(current: try Self.signingKey("k1", 2)).sign(
            Self.forgedPost("relay.test.event", instance: a.relay.instanceID, sequence: 3, userInfo: #"{"n":67}"#), channel: channel)
        let unknownKey = RelaySigning(current: try Self.signingKey("k9", 1)).sign(
            Self.forgedPost("relay.test.event", instance: a.relay.instanceID, sequence: 4, userInfo: #"{"n":68}"#), channel: channel)
        var tampered = captured.replacingOccurrences(of: #""n":1"#, with: #""n":7"#)
        #expect(tampered != captured)
        tampered = tampered.replacingOccurrences(of: #""s":1,"#, with: #""s":5,"#)
        try await notifyRaw([unsigned, wrongKey, unknownKey, tampered, captured], on: channel)
        try a.relay.post(name: .testEvent, userInfo: ["n": 2])
        try await eventually("a's second post") { atB.count == 2 }
        try await eventually("the forgeries counted") { b.relay.statistics.dropped >= 5 }
        let statistics = b.relay.statistics
        print("signed: b received \(atB.values("n")), statistics \(statistics)")
        #expect(atB.values("n") == [1, 2])
        #expect(statistics.droppedUnsigned == 1)
        #expect(statistics.droppedBadSignature == 3)
        #expect(statistics.droppedDuplicate == 1)  // the captured copy
        #expect(atB.all.allSatisfy { $0.relayOrigin == .remote(instance: a.relay.instanceID) })
        await a.stop()
        await b.stop()
    }

    @Test func aReplayedMessageOfAnEarlierIncarnationIsDropped() async throws {
        let channel = try TestServer.freshChannel("replay")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let b = try await RunningRelay(channel: channel) { $0.signing = signing }
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        let first = try await RunningRelay(channel: channel, instanceID: "fixed") { $0.signing = signing }
        try first.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let captured = try first.relay.message(posting: .testEvent, userInfo: ["n": 100], sequence: 7)
        try first.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("the first run's post") { atB.count == 1 }
        await first.stop()
        first.relay.unbridge(.testEvent)
        try await Task.sleep(for: .milliseconds(5))  // the next run's send times come later
        let second = try await RunningRelay(channel: channel, instanceID: "fixed") { $0.signing = signing }
        try second.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try second.relay.post(name: .testEvent, userInfo: ["n": 2])
        try await eventually("the second run's post") { atB.count == 2 }
        try await notifyRaw([captured], on: channel)
        try second.relay.post(name: .testEvent, userInfo: ["n": 3])
        try await eventually("the second run's next post") { atB.count == 3 }
        try await eventually("the replay counted") { b.relay.statistics.droppedReplayed == 1 }
        print("replay: b received \(atB.values("n")), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == [1, 2, 3])
        await second.stop()
        await b.stop()
    }

    @Test func keysRotateWithoutDowntimeCurrentAndPreviousAccepted() async throws {
        let channel = try TestServer.freshChannel("rotate")
        let old = try Self.signingKey("2026-10", 1)
        let new = try Self.signingKey("2026-11", 2)
        // Mid-rotation: one instance still signs with the old key, one with the new.
        let a = try await RunningRelay(channel: channel) { $0.signing = RelaySigning(current: old, previous: [new]) }
        let b = try await RunningRelay(channel: channel) { $0.signing = RelaySigning(current: new, previous: [old]) }
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atA = Inbox(.testEvent, from: a.relay)
        let atB = Inbox(.testEvent, from: b.relay)
        try a.relay.post(name: .testEvent, userInfo: ["n": 1])
        try b.relay.post(name: .testEvent, userInfo: ["n": 2])
        try await eventually("both posts") { atA.count == 1 && atB.count == 1 }
        #expect(a.relay.statistics.dropped == 0)
        #expect(b.relay.statistics.dropped == 0)
        await a.stop()
        await b.stop()
    }

    @Test func signingKeysComeFromTheEnvironmentAndAreValidated() throws {
        let secret = Data(repeating: 7, count: 32).base64EncodedString()
        let signing = try #require(
            try RelaySigning.environment([
                RelaySigning.keyVariable: "new:\(secret)", RelaySigning.previousKeysVariable: "old:\(secret),older:\(secret)",
            ]))
        #expect(signing.current.id == "new")
        #expect(signing.previous.map(\.id) == ["old", "older"])
        #expect(!signing.acceptsSignaturesWithoutChannel)
        let upgrading = try RelaySigning.environment([
            RelaySigning.keyVariable: "new:\(secret)", RelaySigning.acceptsSignaturesWithoutChannelVariable: "1",
        ])
        #expect(upgrading?.acceptsSignaturesWithoutChannel == true)
        #expect(throws: RelayError.self) {
            try RelaySigning.environment([
                RelaySigning.keyVariable: "new:\(secret)", RelaySigning.acceptsSignaturesWithoutChannelVariable: "yes",
            ])
        }
        #expect(try RelaySigning.environment([:]) == nil)
        #expect(throws: RelayError.self) { try RelaySigning.environment([RelaySigning.keyVariable: "short:AAAA"]) }
        #expect(throws: RelayError.self) { try RelaySigning.environment([RelaySigning.keyVariable: "no secret"]) }
        #expect(throws: RelayError.self) { try RelaySigningKey(id: "bad\"id", secret: [UInt8](repeating: 1, count: 32)) }
    }

    // Issue #35, item 5: a message names its key by id, so a second key
    // with the same id could never verify anything.
    @Test func twoKeysWithOneIdAreAConfigurationError() throws {
        let one = Data(repeating: 7, count: 32).base64EncodedString()
        let other = Data(repeating: 8, count: 32).base64EncodedString()
        #expect(throws: RelayError.self) {
            try RelaySigning.environment([
                RelaySigning.keyVariable: "k1:\(one)", RelaySigning.previousKeysVariable: "k1:\(other)",
            ])
        }
        #expect(throws: RelayError.self) {
            try RelaySigning.environment([
                RelaySigning.keyVariable: "k1:\(one)", RelaySigning.previousKeysVariable: "k0:\(one),k0:\(other)",
            ])
        }
        let sameAsCurrent = RelaySigning(current: try Self.signingKey("k1", 1), previous: [try Self.signingKey("k1", 2)])
        #expect(throws: RelayError.self) { try sameAsCurrent.validate() }
        let twoPrevious = RelaySigning(
            current: try Self.signingKey("k2", 1), previous: [try Self.signingKey("k1", 2), try Self.signingKey("k1", 3)])
        #expect(throws: RelayError.self) { try twoPrevious.validate() }
        var configuration = RelayConfiguration(transport: SilentTransport(), instanceID: "a")
        configuration.signing = sameAsCurrent
        do {
            _ = try Relay(configuration: configuration)
            Issue.record("a relay was made with two keys of one id")
        } catch {
            #expect("\(error)".contains("k1"))
            #expect(!"\(error)".contains(one))
        }
        configuration.signing = RelaySigning(current: try Self.signingKey("k2", 1), previous: [try Self.signingKey("k1", 2)])
        _ = try Relay(configuration: configuration)
    }

    // Issue #35, item 8: the channel is under the signature.
    @Test func aSignatureCoversTheChannel() throws {
        let signing = RelaySigning(current: try Self.signingKey("k1", 1), previous: [try Self.signingKey("k0", 2)])
        let x = try RelayChannel("orders")
        let y = try RelayChannel("orders_eu")
        let message = Self.forgedPost("relay.test.event", instance: "a", sequence: 1, userInfo: #"{"n":1}"#)
        let signed = signing.sign(message, channel: x)
        #expect(signing.verify(signed, channel: x) == .valid(message, outdated: false))
        #expect(signing.verify(signed, channel: y) == .wronglySigned)
        // A name that is the start of another names another channel.
        #expect(signing.verify(signing.sign(message, channel: try RelayChannel("order")), channel: x) == .wronglySigned)
        let byPrevious = RelaySigning(current: try Self.signingKey("k0", 2)).sign(message, channel: x)
        #expect(signing.verify(byPrevious, channel: x) == .valid(message, outdated: true))
        // As relays signed before the channel was: refused unless upgrading.
        let unbound = signing.signWithoutChannel(message)
        #expect(signing.verify(unbound, channel: x) == .wronglySigned)
        var upgrading = signing
        upgrading.acceptsSignaturesWithoutChannel = true
        #expect(upgrading.verify(unbound, channel: x) == .valid(message, outdated: true))
        #expect(upgrading.verify(signed, channel: y) == .wronglySigned)
    }

    @Test func aSignedMessageCapturedOnAnotherChannelIsDropped() async throws {
        let x = try TestServer.freshChannel("signedx")
        let y = try TestServer.freshChannel("signedy")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let a = try await RunningRelay(channel: x) { $0.signing = signing }
        let b = try await RunningRelay(channel: y) { $0.signing = signing }
        let c = try await RunningRelay(channel: y) { $0.signing = signing }
        for relay in [a.relay, b.relay, c.relay] { try relay.bridge(.testEvent, userInfoTypes: ["n": Int.self]) }
        let atB = Inbox(.testEvent, from: b.relay)
        // What a listener on x could have captured: a's message, verbatim.
        let captured = try a.relay.message(posting: .testEvent, userInfo: ["n": 66], sequence: 1)
        try await notifyRaw([captured], on: x)
        try await notifyRaw([captured], on: y)
        try c.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("c's post at b") { atB.count == 1 }
        try await eventually("the copy counted") { b.relay.statistics.droppedBadSignature == 1 }
        print("cross-channel: b received \(atB.values("n")), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == [1])
        #expect(b.relay.statistics.dropped == 1)
        await a.stop()
        await b.stop()
        await c.stop()
    }
}
#endif

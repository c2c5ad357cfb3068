#if Relay
import Foundation
import SwiftKVO
import Testing

@testable import SwiftKVORelay

extension NotificationHub.Name {
    static let testEvent: Self = "relay.test.event"
    static let testMarker: Self = "relay.test.marker"
}

/// Every test runs against the real server `make relay-test` starts. The suite
/// is serialized: the restart test stops the server under everyone.
@Suite(.serialized, .enabled(if: TestServer.isConfigured, "needs the PostgreSQL server make relay-test starts"))
struct RelayTests {
    @Test func postsCrossBetweenTwoConnectionsInSenderOrderWithRemoteOrigin() async throws {
        let channel = try TestServer.freshChannel("order")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        let atA = Inbox(.testEvent, from: a.relay)

        for n in 1...200 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("200 posts at b") { atB.count == 200 }
        #expect(atB.values("n") == Array(1...200))
        #expect(atB.all.allSatisfy { $0.relayOrigin == .remote(instance: a.relay.instanceID) })
        // a's own messages came back from the server and were skipped, not delivered.
        try await eventually("a skipping its own 200") { a.relay.statistics.ownMessagesSkipped == 200 }
        #expect(atA.count == 0)
        #expect(b.relay.statistics.delivered == 200)
        #expect(b.relay.statistics.dropped == 0)
        await a.stop()
        await b.stop()
    }

    @Test func hubPostsOfABridgedNameAreForwardedOnceWithoutLoops() async throws {
        let channel = try TestServer.freshChannel("loop")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent)
        try b.relay.bridge(.testEvent)
        try a.relay.bridge(.testMarker)
        try b.relay.bridge(.testMarker)
        let atA = Inbox(.testEvent, from: a.relay)
        let atB = Inbox(.testEvent, from: b.relay)
        let markersAtB = Inbox(.testMarker, from: b.relay)
        let markersAtA = Inbox(.testMarker, from: a.relay)

        // Both relays live in this process and share its hub: a plain post is
        // forwarded by each, arrives once at the other, and goes no further.
        NotificationHub.default.post(name: .testEvent, userInfo: ["text": "hello", "n": 7, "ratio": 0.5])
        try a.relay.post(name: .testMarker)
        try b.relay.post(name: .testMarker)
        try await eventually("markers") { markersAtA.count == 1 && markersAtB.count == 1 }
        #expect(atA.count == 1)
        #expect(atB.count == 1)
        let note = try #require(atB.all.first)
        #expect(note.userInfo["text"] as? String == "hello")
        #expect(note.userInfo["n"] as? Int == 7)
        #expect(note.userInfo["ratio"] as? Double == 0.5)
        #expect(note.relayOrigin == .remote(instance: a.relay.instanceID))
        // A statement's completion reaches its sender after its notifications
        // may have reached the others: wait for it before counting.
        try await eventually("both relays' statements completed") {
            a.relay.statistics.sent >= 2 && b.relay.statistics.sent >= 2
        }
        #expect(a.relay.statistics.sent == 2)
        #expect(b.relay.statistics.sent == 2)
        await a.stop()
        await b.stop()
    }

    @Test func aBurstOfTenThousandPostsArrivesInOrder() async throws {
        let channel = try TestServer.freshChannel("burst")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)

        for n in 0..<10_000 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("10,000 posts", deadline: .seconds(300)) { atB.count == 10_000 }
        #expect(atB.values("n") == Array(0..<10_000))
        #expect(b.relay.statistics.missed == 0)
        #expect(b.relay.statistics.dropped == 0)
        await a.stop()
        await b.stop()
    }

    @Test func aPropertyChangeIsAppliedRemotelyAndNotPublishedAgain() async throws {
        let channel = try TestServer.freshChannel("property")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        let flagsA = Flags()
        let flagsB = Flags()
        try a.relay.replicate(\.checkout, of: flagsA, as: "flags.checkout")
        try b.relay.replicate(\.checkout, of: flagsB, as: "flags.checkout")
        try a.relay.bridge(.testMarker)
        try b.relay.bridge(.testMarker)
        let markersAtA = Inbox(.testMarker, from: a.relay)
        let seenAtB = LockedState<[Bool]>([])
        let token = try flagsB.observe(\.checkout, options: .new) { _, change in
            seenAtB.withLock { $0.append(change.newValue!) }
        }

        flagsA.checkout = true
        try await eventually("b's flag") { seenAtB.withLock { $0 } == [true] }
        #expect(flagsB.checkout)
        // Whatever b sent before its marker reaches a first (order per sender):
        // had b published the applied value again, a would see it now.
        try b.relay.post(name: .testMarker)
        try await eventually("b's marker at a") { markersAtA.count == 1 }
        try await eventually("b's statement completed") { b.relay.statistics.sent >= 1 }
        #expect(b.relay.statistics.sent == 1)
        #expect(a.relay.statistics.delivered == 1)  // the marker only
        #expect(flagsA.checkout)

        flagsB.checkout = false
        try await eventually("a's flag") { !flagsA.checkout }
        token.invalidate()
        await a.stop()
        await b.stop()
    }

    @Test func lastWriterWinsAndTiesGoToTheHigherInstance() async throws {
        let channel = try TestServer.freshChannel("lww")
        let b = try await RunningRelay(channel: channel)
        let flags = Flags()
        try b.relay.replicate(\.banner, of: flags, as: "flags.banner")
        func set(_ value: String, by instance: String, sequence: Int, stamp: UInt64) -> String {
            #"{"v":1,"o":"\#(instance)","s":\#(sequence),"t":"set","n":"flags.banner","c":\#(stamp),"x":"\#(value)"}"#
        }
        try await notifyRaw(
            [
                set("first", by: "instance-b", sequence: 1, stamp: 100),
                set("tie, lower id", by: "instance-a", sequence: 1, stamp: 100),  // stale: a < b
                set("older", by: "instance-a", sequence: 2, stamp: 99),  // stale
                set("newer", by: "instance-a", sequence: 3, stamp: 101),
            ], on: channel)
        try await eventually("four messages handled") {
            let statistics = b.relay.statistics
            return statistics.delivered + statistics.droppedStale == 4
        }
        #expect(flags.banner == "newer")
        #expect(b.relay.statistics.droppedStale == 2)
        // A local write afterwards is stamped above everything seen, so it wins everywhere.
        flags.banner = "local"
        await b.stop()
    }

    @Test func hostilePayloadsAreDroppedAndCounted() async throws {
        let channel = try TestServer.freshChannel("hostile")
        let b = try await RunningRelay(channel: channel)
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testMarker)
        let flags = Flags()
        try b.relay.replicate(\.checkout, of: flags, as: "flags.checkout")
        let events = Inbox(.testEvent, from: b.relay)
        let markers = Inbox(.testMarker, from: b.relay)
        func post(_ name: String, _ sequence: Int, _ userInfo: String = "{}", instance: String = "mallory") -> String {
            #"{"v":1,"o":"\#(instance)","s":\#(sequence),"t":"post","n":"\#(name)","u":\#(userInfo)}"#
        }
        let malformed = [
            "", "not json", "[1,2,3]", "{", "null", #"{"v":1}"#,
            String(repeating: "[", count: 7000),
            #"{"v":2,"o":"m","s":1,"t":"post","n":"relay.test.event","u":{}}"#,  // unknown version
            #"{"v":1,"o":"m","s":-1,"t":"post","n":"relay.test.event","u":{}}"#,  // negative sequence
            #"{"v":1,"o":"m","s":1,"t":"drop table","n":"relay.test.event","u":{}}"#,  // unknown kind
            post("relay.test.event", 1, instance: String(repeating: "m", count: 500)),  // instance id too long
            post("relay.test.event", 1, instance: ""),
            post("relay.test.event", 1, #"{"n":\#(String(repeating: "[", count: 3000))}"#),  // unbalanced
            // Balanced but deeper than any JSON parser should follow.
            post("relay.test.marker", 1, #"{"deep":\#(String(repeating: "[", count: 2000))\#(String(repeating: "]", count: 2000))}"#),
        ]
        let wrongTypes = [
            post("relay.test.event", 1, #"{"n":"seven"}"#),
            post("relay.test.event", 2, #"{"n":1.5}"#),
            post("relay.test.event", 3, #"{"n":7,"extra":1}"#),  // a key not declared
            post("relay.test.event", 4, #"{"n":[7]}"#),
            post("relay.test.marker", 5, "[1,2]"),  // user info that is not an object
            #"{"v":1,"o":"mallory","s":6,"t":"set","n":"flags.checkout","c":1,"x":"yes"}"#,
            post("relay.test.marker", 7, #"{"deep":\#(String(repeating: "[", count: 100))\#(String(repeating: "]", count: 100))}"#),
        ]
        let unknown = [
            post("no.such.name", 8), #"{"v":1,"o":"mallory","s":9,"t":"set","n":"no.such.property","c":1,"x":1}"#,
        ]
        let big = [post("relay.test.marker", 10, #"{"pad":"\#(String(repeating: "x", count: 7800))"}"#)]
        let valid = [post("relay.test.event", 11, #"{"n":42}"#)]
        let duplicate = valid  // sequence 11 was used
        try await notifyRaw(malformed + wrongTypes + unknown + big + valid + duplicate, on: channel)
        try await eventually("the valid post after the hostile ones") { events.count == 1 }
        try await eventually("the duplicate") { b.relay.statistics.droppedDuplicate == 1 }

        let statistics = b.relay.statistics
        #expect(statistics.droppedMalformed == malformed.count)
        #expect(statistics.droppedWrongType == wrongTypes.count)
        #expect(statistics.droppedUnknownName == unknown.count)
        #expect(statistics.droppedDuplicate == duplicate.count)
        #expect(markers.count == 1)  // the big one: large but valid
        #expect(events.values("n") == [42])
        #expect(!flags.checkout)
        await b.stop()
    }

    @Test func anOversizedPostIsAnErrorAndNothingIsSent() async throws {
        let channel = try TestServer.freshChannel("oversized")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent)
        try b.relay.bridge(.testEvent)
        let atB = Inbox(.testEvent, from: b.relay)
        let local = Inbox(.testEvent)

        let text = String(repeating: "é", count: 4000)  // 8000 bytes of UTF-8
        #expect(throws: RelayError.self) { try a.relay.post(name: .testEvent, userInfo: ["text": text]) }
        do {
            try a.relay.post(name: .testEvent, userInfo: ["text": text])
        } catch .payloadTooLarge(let bytes, let limit) {
            #expect(bytes > limit)
            #expect(limit == PostgresTransport.payloadLimit)
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(local.count == 0)  // nor posted locally
        // Through the hub there is nobody to throw to: not sent, counted.
        NotificationHub.default.post(name: .testEvent, userInfo: ["text": text])
        #expect(a.relay.statistics.notSent == 1)
        #expect(throws: RelayError.notEncodable(key: "object")) {
            try a.relay.post(name: .testEvent, userInfo: ["object": NotEncodable()])
        }
        #expect(throws: RelayError.notBridged("relay.test.marker")) { try a.relay.post(name: .testMarker) }

        try a.relay.post(name: .testEvent, userInfo: ["text": "fits"])
        try await eventually("the post that fits") { atB.count >= 1 }
        #expect(atB.all.map { $0.userInfo["text"] as? String } == ["fits"])
        #expect(b.relay.statistics.missed == 0)  // refused posts used no sequence number
        await a.stop()
        await b.stop()
    }

    @Test func channelNamesCannotLeaveTheirQuotes() throws {
        #expect(throws: RelayError.invalidChannelName(#"x"; DROP TABLE t; --"#)) {
            try RelayChannel(#"x"; DROP TABLE t; --"#)
        }
        #expect(throws: RelayError.self) { try RelayChannel("") }
        #expect(throws: RelayError.self) { try RelayChannel(String(repeating: "c", count: 64)) }
        #expect(throws: RelayError.self) { try RelayChannel("nul\u{0}") }
        #expect(try RelayChannel("Mixed Case; with spaces").name == "Mixed Case; with spaces")
    }

    @Test func aChannelNameWithSQLCharactersWorksAsAnIdentifier() async throws {
        let channel = try RelayChannel("it's; select 1 -- \(UUID().uuidString.prefix(6))")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent)
        try b.relay.bridge(.testEvent)
        let atB = Inbox(.testEvent, from: b.relay)
        try a.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("a post on an odd channel") { atB.count == 1 }
        await a.stop()
        await b.stop()
    }

    @Test func configurationComesFromTheEnvironment() throws {
        let socket = try RelayConfiguration.environment(["PGUSER": "svc", "PGHOST": "/run/postgresql", "PGPORT": "6000"])
        #expect(socket.unixSocketPath == "/run/postgresql/.s.PGSQL.6000")
        #expect(socket.username == "svc")
        #expect(socket.database == "svc")
        let tcp = try RelayConfiguration.environment(
            ["PGUSER": "svc", "PGPASSWORD": "secret", "PGHOST": "db", "PGDATABASE": "app", "PGSSLMODE": "require"])
        #expect(tcp.host == "db")
        #expect(tcp.port == 5432)
        #expect(tcp.password == "secret")
        #expect(tcp.tls.isEnforced)
        #expect(throws: RelayError.self) { try RelayConfiguration.environment([:]) }
        #expect(throws: RelayError.self) { try RelayConfiguration.environment(["PGUSER": "u", "PGPORT": "x"]) }
        #expect(throws: RelayError.self) { try RelayConfiguration.environment(["PGUSER": "u", "PGSSLMODE": "allow"]) }
    }
}

/// A user-info value with no Codable conformance.
struct NotEncodable: Sendable {}
#endif

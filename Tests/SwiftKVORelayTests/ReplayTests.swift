#if Relay
import Foundation
import Logging
import SwiftKVO
import Testing

@testable import SwiftKVORelay

// Issue #35: replays are told by their place in the sender's sequence, never
// by the clock; what arrives can neither silence an instance nor flood the
// log. Each test names the item of the issue it covers. A paused receiver is
// simulated by messages whose send times lie in the past.
extension RelayTests {
    static var nowMilliseconds: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// A signed post of `relay.test.event` as a key holder would write it,
    /// with any incarnation and send time.
    static func signedPost(
        _ signing: RelaySigning, on channel: RelayChannel, instance: String, incarnation: UInt64, sequence: UInt64,
        sentAt sent: UInt64, n: Int
    ) throws -> String {
        let body = try Wire.postBody(name: NotificationHub.Name.testEvent.rawValue, userInfo: ["n": n])
        return signing.sign(
            Wire.prefix(instance: instance, incarnation: incarnation) + String(sequence) + #","w":"# + String(sent)
                + body, channel: channel)
    }

    // Item 1.
    @Test(arguments: [false, true])
    func aCopyOfASeenMessageIsADuplicateEvenPastTheSequenceBound(signed: Bool) async throws {
        let channel = try TestServer.freshChannel("farreplay")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let a = try await RunningRelay(channel: channel) { if signed { $0.signing = signing } }
        // A small bound, so that a few dozen posts reach past it.
        let b = try await RunningRelay(channel: channel) {
            $0.outboxCapacity = 16
            $0.maximumSequenceJump = 16
            if signed { $0.signing = signing }
        }
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        // a's first post, as any listener on the channel can capture it.
        let captured = try a.relay.message(posting: .testEvent, userInfo: ["n": 1], sequence: 1)
        for n in 1...40 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("a's 40 posts") { atB.count == 40 }
        try await notifyRaw([captured], on: channel)
        try a.relay.post(name: .testEvent, userInfo: ["n": 41])
        try await eventually("a's next post") { atB.values("n").contains(41) }
        try await eventually("the copy counted") { b.relay.statistics.dropped >= 1 }
        print("far replay (signed: \(signed)): b received \(atB.values("n")), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == Array(1...41))
        #expect(b.relay.statistics.droppedDuplicate == 1)
        #expect(b.relay.statistics.resynchronizations == 0)
        await a.stop()
        await b.stop()
    }

    // Item 2.
    @Test func aSignedMessageOfANewerIncarnationDoesNotSilenceTheCurrentOne() async throws {
        let channel = try TestServer.freshChannel("newerinc")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let recorder = LogRecorder()
        let a = try await RunningRelay(channel: channel) { $0.signing = signing }
        let b = try await RunningRelay(channel: channel, logger: recorder.logger(level: .warning)) {
            $0.signing = signing
        }
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        try a.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("a's first post") { atB.count == 1 }
        // A key holder speaks for a: another incarnation, sent 29 s ahead.
        let ahead = Self.nowMilliseconds + 29_000
        let forged = try Self.signedPost(
            signing, on: channel, instance: a.relay.instanceID, incarnation: Incarnation.make(wallClockMilliseconds: ahead),
            sequence: 1, sentAt: ahead, n: 99)
        try await notifyRaw([forged], on: channel)
        try await eventually("the forged post") { atB.count == 2 }
        for n in 2...28 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("a's 27 posts after the forged one", deadline: .seconds(20)) { atB.count == 29 }
        let statistics = b.relay.statistics
        let warnings = recorder.all.filter { $0.level >= .warning }.map(\.rendered)
        print("newer incarnation: b received \(atB.values("n")), warnings \(warnings), statistics \(statistics)")
        #expect(atB.values("n") == [1, 99] + Array(2...28))
        #expect(statistics.dropped == 0)
        // Not silent: the conflict is counted, warned about and reported.
        #expect(statistics.incarnationConflicts == 1)
        #expect(warnings.contains { $0.contains("with an incarnation after a newer one") })
        #expect(statistics.resynchronizations + statistics.resynchronizationsCoalesced == 2)
        await a.stop()
        await b.stop()
    }

    // Item 3.
    @Test func aFixedIDRestartedOnAHostWhoseClockIsBehindIsHeardAsARestart() async throws {
        let channel = try TestServer.freshChannel("slowclock")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let b = try await RunningRelay(channel: channel) { $0.signing = signing }
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)
        let first = try await RunningRelay(channel: channel, instanceID: "fixed") { $0.signing = signing }
        try first.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        for n in 1...3 { try first.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("the first run's posts") { atB.count == 3 }
        await first.stop()
        first.relay.unbridge(.testEvent)
        // The second run, on a host whose clock is 20 s behind (within the
        // 30 s skew allowed): its incarnation and send times are 20 s early.
        let behind = Self.nowMilliseconds - 20_000
        let incarnation = Incarnation.make(wallClockMilliseconds: behind)
        let second = try (1...3).map { sequence in
            try Self.signedPost(
                signing, on: channel, instance: "fixed", incarnation: incarnation, sequence: UInt64(sequence),
                sentAt: behind + UInt64(sequence), n: 3 + sequence)
        }
        try await notifyRaw(second, on: channel)
        try await eventually("the second run's posts", deadline: .seconds(20)) { atB.count == 6 }
        print("slow clock: b received \(atB.values("n")), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == Array(1...6))
        #expect(b.relay.statistics.dropped == 0)
        #expect(
            resyncs.all.contains {
                $0.userInfo["reason"] as? String == "restarted" && $0.userInfo["instance"] as? String == "fixed"
            })
        await b.stop()
    }

    // Item 12.
    @Test func aMessageReadLateIsDeliveredLateNeverDropped() async throws {
        let channel = try TestServer.freshChannel("lateread")
        let signing = RelaySigning(current: try Self.signingKey("k1", 1))
        let b = try await RunningRelay(channel: channel) { $0.signing = signing }
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        let incarnation = Incarnation.make(wallClockMilliseconds: Self.nowMilliseconds - 70_000)
        func post(_ sequence: UInt64, sentAt sent: UInt64) throws -> String {
            try Self.signedPost(
                signing, on: channel, instance: "paused-a", incarnation: incarnation, sequence: sequence, sentAt: sent,
                n: Int(sequence))
        }
        try await notifyRaw([try post(1, sentAt: Self.nowMilliseconds)], on: channel)
        try await eventually("a's first post") { atB.count == 1 }
        // What b reads 65 s after a sent it (b paused with its connection kept;
        // the order of send times within one sender is not what is judged).
        let late = try (2...4).map { try post(UInt64($0), sentAt: Self.nowMilliseconds - 65_000) }
        try await notifyRaw(late, on: channel)
        try await eventually("a's late posts", deadline: .seconds(20)) { atB.count == 4 }
        // A copy of one is still a duplicate, and a's next post goes on.
        try await notifyRaw([late[0], try post(5, sentAt: Self.nowMilliseconds)], on: channel)
        try await eventually("a's next post") { atB.count == 5 }
        try await eventually("the copy counted") { b.relay.statistics.dropped == 1 }
        print("late read: b received \(atB.values("n")), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == Array(1...5))
        #expect(b.relay.statistics.droppedDuplicate == 1)
        #expect(b.relay.statistics.missed == 0)
        await b.stop()
    }

    // Item 9.
    @Test func inventedIDsCannotLockANewInstanceOutWhenUnsigned() async throws {
        let channel = try TestServer.freshChannel("lockout")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel) { $0.maximumTrackedInstances = 8 }
        for relay in [a.relay, b.relay] {
            try relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
            try relay.bridge(.testMarker)
        }
        let atB = Inbox(.testEvent, from: b.relay)
        let markers = Inbox(.testMarker, from: b.relay)
        let captured = try a.relay.message(posting: .testEvent, userInfo: ["n": 1], sequence: 1)
        for n in 1...2 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("a's posts") { atB.count == 2 }
        let invented = 100
        try await executeRaw(
            """
            SELECT count(pg_notify(\(sqlLiteral(channel.name)), format('{"v":1,"o":"invented-%s","s":1,"t":"post","n":"relay.test.marker","u":{}}', g)))
            FROM generate_series(1, \(invented)) AS g
            """)
        try await eventually("the invented ids handled") {
            b.relay.statistics.delivered + b.relay.statistics.dropped == 2 + invented
        }
        // A new instance, while the table is full of ids heard within the idle timeout.
        let c = try await RunningRelay(channel: channel)
        try c.relay.bridge(.testMarker)
        try c.relay.post(name: .testMarker)
        try await eventually("c's marker", deadline: .seconds(20)) {
            markers.all.contains { $0.relayOrigin == .remote(instance: c.relay.instanceID) }
        }
        // a, heard twice, was kept: a copy of its first post is still a duplicate.
        try await notifyRaw([captured], on: channel)
        try await eventually("the copy counted") { b.relay.statistics.dropped == 1 }
        print("lockout: statistics \(b.relay.statistics)")
        #expect(markers.count == invented + 1)
        #expect(b.relay.statistics.droppedUntracked == 0)
        #expect(b.relay.statistics.droppedDuplicate == 1)
        #expect(atB.values("n") == [1, 2])
        await c.stop()
        await a.stop()
        await b.stop()
    }

    // Item 10.
    @Test func aFloodOfMessagesInAnInstancesNameLogsAFewWarnings() async throws {
        let channel = try TestServer.freshChannel("ownflood")
        let recorder = LogRecorder()
        let a = try await RunningRelay(channel: channel, logger: recorder.logger(level: .info)) {
            $0.receiveBacklogBytes = 64 << 20
            $0.receiveBacklogBytesPerSender = 64 << 20
        }
        try a.relay.bridge(.testMarker)
        let clock = ContinuousClock()
        let start = clock.now
        let flood = 5_000
        try await executeRaw(
            """
            SELECT count(pg_notify(\(sqlLiteral(channel.name)), format('{"v":1,"o":"\(a.relay.instanceID)","i":7,"s":%s,"t":"post","n":"relay.test.marker","u":{}}', g)))
            FROM generate_series(1, \(flood)) AS g
            """)
        try await eventually("the flood handled", deadline: .seconds(120)) { a.relay.statistics.droppedOwnID == flood }
        let elapsed = clock.now - start
        let warnings = recorder.all.filter { $0.level >= .warning }
        print("own-id flood: \(warnings.count) warnings in \(elapsed), statistics \(a.relay.statistics)")
        let intervals = Int((elapsed / Relay.warningInterval).rounded(.up))
        #expect(warnings.count >= 1)
        #expect(warnings.count <= intervals + 1)
        await a.stop()
    }

    // Item 11.
    @Test func anIDThatReadsLikeALogLineIsLoggedEscaped() async throws {
        let channel = try TestServer.freshChannel("logline")
        let recorder = LogRecorder()
        let b = try await RunningRelay(channel: channel, logger: recorder.logger())
        try b.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        let id = "x] relay shut down with its queue sent [ unsent=0"
        try await notifyRaw(
            [
                Self.forgedPost("relay.test.marker", instance: id, sequence: 1),
                Self.forgedPost("relay.test.marker", instance: id, sequence: 5),  // a gap: a warning
                Self.forgedPost("nobody.bridges.this", instance: id, sequence: 6),  // a drop: a debug line
            ], on: channel)
        try await eventually("the markers") { markers.count == 2 }
        try await eventually("the drop") { b.relay.statistics.droppedUnknownName == 1 }
        let lines = recorder.all.map(\.rendered)
        print("log line: \(lines.map(\.debugDescription))")
        #expect(lines.contains { $0.hasPrefix("relay missed messages") })
        #expect(!lines.contains { $0.contains("relay shut down") || $0.contains("x]") || $0.contains("unsent=") })
        #expect(lines.filter { $0.contains(#"x\u{5d}\u{20}relay\u{20}shut"#) }.count == 2)
        await b.stop()
    }
}
#endif

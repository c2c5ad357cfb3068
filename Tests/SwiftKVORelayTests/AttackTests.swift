#if Relay
import Foundation
import Logging
import SwiftKVO
import Synchronization
import Testing

@testable import SwiftKVORelay

// Issue #22: another client of the database, speaking on the relay's channel
// with a raw connection, must not crash, silence, flood or fool an instance.
// Each test names the item of the issue it covers.
extension RelayTests {
    /// A `set` message as another client would write it.
    static func forgedSet(
        _ name: String, _ value: String, instance: String, sequence: UInt64, stamp: UInt64
    ) -> String {
        #"{"v":1,"o":"\#(instance)","s":\#(sequence),"t":"set","n":"\#(name)","c":\#(stamp),"x":\#(value)}"#
    }

    /// A `post` message as another client would write it (without an
    /// incarnation unless one is given).
    static func forgedPost(
        _ name: String, instance: String, incarnation: UInt64? = nil, sequence: UInt64, userInfo: String = "{}"
    ) -> String {
        let incarnation = incarnation.map { #""i":\#($0),"# } ?? ""
        return #"{"v":1,"o":"\#(instance)",\#(incarnation)"s":\#(sequence),"t":"post","n":"\#(name)","u":\#(userInfo)}"#
    }

    // Item 1a.
    @Test func aMaximalStampFromTheWireIsNotAdoptedAndTheNextLocalWriteDoesNotTrap() async throws {
        let channel = try TestServer.freshChannel("maxstamp")
        let b = try await RunningRelay(channel: channel)
        let a = try await RunningRelay(channel: channel)
        let flagsB = Flags()
        let flagsA = Flags()
        try b.relay.replicate(\.banner, of: flagsB, as: "flags.banner")
        try a.relay.replicate(\.banner, of: flagsA, as: "flags.banner")
        try await notifyRaw(
            [Self.forgedSet("flags.banner", #""forged""#, instance: "mallory", sequence: 1, stamp: .max)], on: channel)
        try await eventually("the forged stamp handled") { b.relay.statistics.delivered + b.relay.statistics.dropped == 1 }
        print("max stamp: banner at b is \(flagsB.banner.debugDescription), statistics \(b.relay.statistics)")
        #expect(flagsB.banner == "")
        #expect(b.relay.statistics.droppedFutureStamp == 1)
        // The next local write is stamped and sent, and wins at the other instance.
        flagsB.banner = "local"
        try await eventually("b's write at a") { flagsA.banner == "local" }
        await a.stop()
        await b.stop()
    }

    // Item 1b.
    @Test func sequenceGapsNearTheLimitOfUInt64NeverOverflowTheMissedCount() async throws {
        let channel = try TestServer.freshChannel("gapoverflow")
        let b = try await RunningRelay(channel: channel)
        try b.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        try await notifyRaw(
            [
                Self.forgedPost("nobody.bridges.this", instance: "z", sequence: 1),
                Self.forgedPost("nobody.bridges.this", instance: "z", sequence: .max),
                Self.forgedPost("nobody.bridges.this", instance: "y", sequence: 1),
                Self.forgedPost("nobody.bridges.this", instance: "y", sequence: 3),
                Self.forgedPost("relay.test.marker", instance: "x", sequence: 1),
            ], on: channel)
        try await eventually("the marker after the forged gaps") { markers.count == 1 }
        let statistics = b.relay.statistics
        print("gap overflow: \(statistics)")
        #expect(statistics.missed == 0)
        // Unknown names are dropped without tracking a new instance's sequence.
        #expect(statistics.droppedUnknownName == 4)
        await b.stop()
    }

    // Item 2.
    @Test func aForgedHugeSequenceNumberDoesNotSilenceARealInstance() async throws {
        let channel = try TestServer.freshChannel("silence")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        try a.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("a's first post") { atB.count == 1 }
        // Neither an unknown name nor a known one with a forged sequence (in
        // the real instance's incarnation) may steer its sequence space for good.
        let (id, incarnation) = (a.relay.instanceID, a.relay.incarnation)
        try await notifyRaw(
            [
                Self.forgedPost(
                    "nobody.bridges.this", instance: id, incarnation: incarnation, sequence: 1_000_000_000_000),
                Self.forgedPost(
                    "relay.test.event", instance: id, incarnation: incarnation, sequence: 1_000_000_000_001,
                    userInfo: #"{"n":99}"#),
            ], on: channel)
        for n in 2...4 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try b.relay.bridge(.testMarker)
        try a.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        try a.relay.post(name: .testMarker)
        try await eventually("a's marker", deadline: .seconds(20)) { markers.count == 1 }
        print("silence: b received \(atB.values("n")), statistics \(b.relay.statistics)")
        // Unsigned, the forged post itself is delivered (only signing can tell);
        // but the real instance goes on below the forged jump at once, and the
        // jump is reported as a restart.
        #expect(atB.values("n").filter { $0 != 99 } == [1, 2, 3, 4])
        #expect(b.relay.statistics.droppedDuplicate == 0)
        #expect(b.relay.statistics.resynchronizations + b.relay.statistics.resynchronizationsCoalesced >= 1)
        await a.stop()
        await b.stop()
    }

    // Item 3.
    @Test func aStormOfForgedGapsPostsFewResynchronizationsAndFewWarnings() async throws {
        let channel = try TestServer.freshChannel("storm")
        let recorder = LogRecorder()
        // A backlog that holds the whole storm: this test is about gaps, not shedding.
        let b = try await RunningRelay(channel: channel, logger: recorder.logger(level: .info)) {
            $0.receiveBacklogBytes = 64 << 20
            $0.receiveBacklogBytesPerSender = 64 << 20
        }
        try b.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)
        let clock = ContinuousClock()
        let start = clock.now
        let storm = 100_000
        // One statement, 100,000 messages of one forged id, each a gap of one.
        try await executeRaw(
            """
            SELECT count(pg_notify(\(sqlLiteral(channel.name)), format('{"v":1,"o":"storm","s":%s,"t":"post","n":"relay.test.marker","u":{}}', g * 2)))
            FROM generate_series(1, \(storm)) AS g
            """)
        try await notifyRaw([Self.forgedPost("relay.test.marker", instance: "after-storm", sequence: 1)], on: channel)
        try await eventually("the marker after the storm", deadline: .seconds(300)) { markers.count == storm + 1 }
        // Resynchronize notifications come at most once per instance per interval.
        try await Task.sleep(for: .seconds(2))
        let elapsed = clock.now - start
        let warnings = recorder.all.filter { $0.level >= .warning }
        print(
            "storm: \(resyncs.count) resynchronize notifications, \(warnings.count) warnings in \(elapsed),",
            "statistics \(b.relay.statistics)")
        let intervals = Int((elapsed / .seconds(1)).rounded(.up))
        #expect(resyncs.count <= intervals + 1)
        #expect(warnings.count <= intervals + 1)
        // Coalesced, not lost: the notifications together report every missed message.
        #expect(resyncs.all.compactMap { $0.userInfo["missed"] as? Int }.reduce(0, +) == storm - 1)
        #expect(b.relay.statistics.missed == storm - 1)
        await b.stop()
    }

    // Item 5.
    @Test func aStampFarAheadOfTheClockIsDroppedNotAdopted() async throws {
        let channel = try TestServer.freshChannel("future")
        let b = try await RunningRelay(channel: channel)
        let flags = Flags()
        try b.relay.replicate(\.banner, of: flags, as: "flags.banner")
        let year3000: UInt64 = 32_503_680_000_000_000
        try await notifyRaw(
            [Self.forgedSet("flags.banner", #""from the future""#, instance: "mallory", sequence: 1, stamp: year3000)], on: channel)
        try await eventually("the future stamp handled") { b.relay.statistics.delivered + b.relay.statistics.dropped == 1 }
        print("future stamp: banner \(flags.banner.debugDescription), statistics \(b.relay.statistics)")
        #expect(flags.banner == "")
        #expect(b.relay.statistics.delivered == 0)
        #expect(b.relay.statistics.droppedFutureStamp == 1)
        // A later instance writing with its wall clock still wins.
        let now = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        try await notifyRaw(
            [Self.forgedSet("flags.banner", #""now""#, instance: "newcomer", sequence: 1, stamp: now)], on: channel)
        try await eventually("the current write") { flags.banner == "now" }
        await b.stop()
    }

    // Item 6.
    @Test func aRestartedInstanceWithAFixedIDIsHeardFromItsFirstMessage() async throws {
        let channel = try TestServer.freshChannel("restart_id")
        let b = try await RunningRelay(channel: channel)
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let atB = Inbox(.testEvent, from: b.relay)
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)
        let first = try await RunningRelay(channel: channel, instanceID: "fixed-id")
        try first.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        for n in 1...5 { try first.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("the first run's posts") { atB.count == 5 }
        await first.stop()
        first.relay.unbridge(.testEvent)
        let second = try await RunningRelay(channel: channel, instanceID: "fixed-id")
        try second.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        for n in 6...8 { try second.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try b.relay.bridge(.testMarker)
        try second.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        try second.relay.post(name: .testMarker)
        try await eventually("the second run's marker", deadline: .seconds(20)) { markers.count == 1 }
        print("restarted id: b received \(atB.values("n")), resynchronize reasons \(resyncs.all.map { $0.userInfo["reason"] ?? "" }), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == Array(1...8))
        #expect(resyncs.all.contains { $0.userInfo["reason"] as? String == "restarted" })
        #expect(b.relay.statistics.droppedDuplicate == 0)
        await second.stop()
        await b.stop()
    }

    // Item 6.
    @Test func anEmptyOrOverlongConfiguredIDIsRefusedWithAClearError() throws {
        let connection = try TestServer.connection()
        for id in ["", String(repeating: "i", count: 129), "line\nbreak"] {
            var refused = false
            do {
                _ = try Relay(configuration: RelayConfiguration(postgres: connection, instanceID: id))
            } catch {
                refused = true
                print("instance id \(id.prefix(10).debugDescription)…: \(error)")
            }
            #expect(refused, "\(id.prefix(10).debugDescription)")
        }
    }

    // Item 7.
    @Test func aFloodOfForgedIDsCannotEvictALiveInstanceToReplayItsMessages() async throws {
        let channel = try TestServer.freshChannel("evict")
        let a = try await RunningRelay(channel: channel)
        // A backlog that holds the whole flood of ids: this test is about the table, not shedding.
        let b = try await RunningRelay(channel: channel) {
            $0.receiveBacklogBytes = 64 << 20
            $0.receiveBacklogBytesPerSender = 64 << 20
        }
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try a.relay.bridge(.testMarker)
        try b.relay.bridge(.testMarker)
        let atB = Inbox(.testEvent, from: b.relay)
        let markers = Inbox(.testMarker, from: b.relay)
        // Capture a's first message as any listener on the channel can.
        let captured = try a.relay.message(posting: .testEvent, userInfo: ["n": 1], sequence: 1)
        // Heard twice, a is a regular, not a stranger (InstanceTable).
        for n in 1...2 { try a.relay.post(name: .testEvent, userInfo: ["n": n]) }
        try await eventually("a's posts") { atB.count == 2 }
        let forged = 5_000
        try await executeRaw(
            """
            SELECT count(pg_notify(\(sqlLiteral(channel.name)), format('{"v":1,"o":"forged-%s","s":1,"t":"post","n":"relay.test.marker","u":{}}', g)))
            FROM generate_series(1, \(forged)) AS g
            """)
        try await notifyRaw([captured], on: channel)
        try a.relay.post(name: .testMarker)
        try await eventually("a's marker", deadline: .seconds(120)) {
            markers.all.contains { $0.relayOrigin == .remote(instance: a.relay.instanceID) }
        }
        // Senders take turns in b's backlog, so a's marker can overtake forged
        // messages still queued: wait until every message sent was handled (a's
        // posts, the forged ones, the captured copy of a's post, a's marker).
        try await eventually("every message handled at b", deadline: .seconds(120)) {
            let statistics = b.relay.statistics
            return statistics.delivered + statistics.dropped == 2 + forged + 1 + 1
        }
        print("evict: a's posts at b \(atB.values("n")), statistics \(b.relay.statistics)")
        #expect(atB.values("n") == [1, 2])
        let statistics = b.relay.statistics
        #expect(statistics.droppedDuplicate == 1)
        // The table kept a: unsigned, the invented ids took each other's places
        // (strangers), none was refused (issue #35, item 9).
        #expect(statistics.droppedUntracked == 0)
        await a.stop()
        await b.stop()
    }

    // Item 8.
    @Test func identifiersFromTheWireCannotForgeLogLinesNorReachTheApplicationUnprintable() async throws {
        let channel = try TestServer.freshChannel("inject")
        let recorder = LogRecorder()
        let b = try await RunningRelay(channel: channel, logger: recorder.logger())
        try b.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        let evil = #"x\n2026-11-25T00:00:00+0000 critical SwiftKVORelay: relay halted: \u001b[31mcall ops\u001b[0m"#
        let ids = [evil, #"nul\u0000id"#, "rtl\u{202E}di", #"esc\u001bid"#, #"del\u007fid"#]
        var payloads: [String] = []
        for id in ids {
            payloads.append(Self.forgedPost("relay.test.marker", instance: id, sequence: 1))
            payloads.append(Self.forgedPost("relay.test.marker", instance: id, sequence: 5))  // a gap: a warning
            payloads.append(Self.forgedPost("nobody.bridges.this", instance: id, sequence: 6))
        }
        try await notifyRaw(payloads + [Self.forgedPost("relay.test.marker", instance: "plain", sequence: 1)], on: channel)
        try await eventually("the plain marker") { markers.all.contains { $0.relayOrigin == .remote(instance: "plain") } }
        let origins = markers.all.compactMap { note -> String? in
            guard case .remote(let instance) = note.relayOrigin else { return nil }
            return instance
        }
        let lines = recorder.all.map(\.rendered)
        print("injection: origins \(origins.map(\.debugDescription)), log lines \(lines.map(\.debugDescription))")
        func printable(_ text: String) -> Bool {
            !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
        }
        #expect(origins.allSatisfy(printable))
        #expect(lines.allSatisfy(printable))
        #expect(!lines.contains { $0.contains("relay halted") })
        #expect(b.relay.statistics.droppedMalformed == ids.count * 3)
        await b.stop()
    }

    // Item 9.
    @Test func everyDroppedMessageIsCountedUnderItsReasonAndUntypedInfoNests32Deep() async throws {
        let channel = try TestServer.freshChannel("counted")
        let b = try await RunningRelay(channel: channel)
        try b.relay.bridge(.testMarker)
        let markers = Inbox(.testMarker, from: b.relay)
        let prefix = Wire.prefix(instance: b.relay.instanceID, incarnation: b.relay.incarnation)
        func nested(_ depth: Int) -> String {
            #"{"deep":\#(String(repeating: "[", count: depth))1\#(String(repeating: "]", count: depth))}"#
        }
        try await notifyRaw(
            [
                prefix + "1 not json",  // starts like b's own message
                prefix + "2" + #","v":1,"t":"post","n":"relay.test.marker","u":{"x":1}}"#.replacingOccurrences(of: "post", with: "pots"),
                Self.forgedPost("relay.test.marker", instance: "m", sequence: 1, userInfo: nested(32)),
                Self.forgedPost("relay.test.marker", instance: "m", sequence: 2, userInfo: nested(33)),
            ], on: channel)
        try await eventually("four messages handled") {
            let statistics = b.relay.statistics
            return statistics.delivered + statistics.dropped + statistics.ownMessagesSkipped >= 4
        }
        let statistics = b.relay.statistics
        print("counted: \(statistics), markers \(markers.count)")
        #expect(statistics.ownMessagesSkipped == 0)
        #expect(statistics.droppedMalformed == 2)
        #expect(markers.count == 1)  // 32 deep is within the documented cap
        #expect(statistics.droppedWrongType == 1)  // 33 is not
        await b.stop()
    }

    // Item 4.
    @Test func aFloodOfNearLimitMessagesKeepsMemoryBoundedAndRealPostsFlowing() async throws {
        let channel = try TestServer.freshChannel("flood")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testMarker)
        let atB = Inbox(.testEvent, from: b.relay)
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)
        // An application slower than the flood: b's backlog fills and sheds.
        let slowObserver = try NotificationHub.default.addObserver(forName: .testMarker) { _ in usleep(1000) }
        defer { slowObserver.invalidate() }
        let baseline = residentBytes()
        let peak = Atomic<Int>(baseline)
        let sampler = Task {
            while !Task.isCancelled {
                peak.max(residentBytes(), ordering: .relaxed)
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        defer { sampler.cancel() }
        // 100,000 posts of 7,9xx bytes in one statement: delivered together when it commits.
        let flood = 100_000
        try await executeRaw(
            """
            SELECT count(pg_notify(\(sqlLiteral(channel.name)), format('{"o":"flood","s":%s,"v":1,"t":"post","n":"relay.test.marker","u":{"pad":"%s"}}', g, repeat('x', 7900))))
            FROM generate_series(1, \(flood)) AS g
            """)
        func handled(_ relay: Relay) -> Int {
            let statistics = relay.statistics
            return statistics.delivered + statistics.droppedUnknownName + statistics.droppedShed
        }
        try await eventually("the flood arriving") { handled(b.relay) > 0 }
        let clock = ContinuousClock()
        let sent = clock.now
        try a.relay.post(name: .testEvent, userInfo: ["n": 1])
        try await eventually("the real post during the flood", deadline: .seconds(300)) { atB.count == 1 }
        let delay = clock.now - sent
        let floodHandledAtArrival = handled(b.relay)
        try await eventually("every flood message accounted for", deadline: .seconds(300)) {
            handled(a.relay) == flood && handled(b.relay) == flood + 1
        }
        sampler.cancel()
        let statistics = b.relay.statistics
        let growth = peak.load(ordering: .relaxed) - baseline
        print(
            "flood: real post after \(delay), \(floodHandledAtArrival) of \(flood) flood messages handled then;",
            "RSS \(baseline >> 20) MiB, peak +\(growth >> 20) MiB; b: \(statistics)")
        #expect(atB.values("n") == [1])
        #expect(!resyncs.all.contains { $0.userInfo["instance"] as? String == a.relay.instanceID })
        // Every flood message delivered or shed, and counted; the real post delivered.
        #expect(statistics.delivered - 1 + statistics.droppedShed == flood)
        #expect(statistics.dropped == statistics.droppedShed)
        #expect(statistics.droppedShed > 0)
        // The flood's own shed messages show as its gaps; the real sender lost nothing.
        #expect(statistics.missed <= statistics.droppedShed)
        // The documented bound (RelayingBetweenInstances, "Bounds"): 64 MiB over the baseline.
        #expect(growth < 64 << 20)
        await a.stop()
        await b.stop()
    }
}

/// This process's resident set size, in bytes (VmRSS), or 0 if unknown.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
}
#endif

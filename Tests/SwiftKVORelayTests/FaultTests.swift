#if Relay
import Foundation
import SwiftKVO
import Testing

@testable import SwiftKVORelay

extension NotificationHub.Name {
    static let peerPing: Self = "peer.ping"
    static let peerPong: Self = "peer.pong"
}

/// Faults and process boundaries, against the real server. Serialized with
/// the rest (one suite would be simpler to read, but these need the
/// Makefile's commands): the restart stops the server under every connection.
extension RelayTests {
    @Test func aServerRestartMidStreamReconnectsResynchronizesAndReportsTheGap() async throws {
        let channel = try TestServer.freshChannel("restart")
        let a = try await RunningRelay(channel: channel)
        let b = try await RunningRelay(channel: channel)
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try a.relay.bridge(.testMarker)
        try b.relay.bridge(.testMarker)
        let atB = Inbox(.testEvent, from: b.relay)
        let markers = Inbox(.testMarker, from: b.relay)
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)

        // a posts a numbered stream while the server goes down and comes back.
        let total = 600
        let sender = Task {
            for n in 1...total {
                try a.relay.post(name: .testEvent, userInfo: ["n": n])
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        try await eventually("the stream under way") { atB.count >= 50 }
        try TestServer.runCommand("RELAY_PG_STOP")
        try TestServer.runCommand("RELAY_PG_START")
        try await sender.value
        // Both back (not merely not yet aware of the restart): a marker sent
        // before b listens again would be lost across the gap.
        try await eventually("both relays reconnected") { a.reconnected && b.reconnected }
        try a.relay.post(name: .testMarker)
        try await eventually("a's marker after the restart") { markers.count == 1 }

        let received = atB.values("n")
        let statisticsA = a.relay.statistics
        let statisticsB = b.relay.statistics
        print(
            "restart: \(received.count) of \(total) delivered, \(statisticsB.missed) reported missed,",
            "\(statisticsB.droppedDuplicate) resends dropped, disconnects a=\(statisticsA.disconnects)",
            "b=\(statisticsB.disconnects), resynchronize notifications at b: \(resyncs.count)")
        // In order, nothing twice.
        #expect(received == received.sorted())
        #expect(Set(received).count == received.count)
        // Every message is delivered or reported missed: loss only across the gap, never silent.
        #expect(received.count + statisticsB.missed == total)
        #expect(statisticsB.disconnects >= 1)
        #expect(statisticsA.disconnects >= 1)
        #expect(resyncs.count >= 1)
        #expect(resyncs.all.contains { $0.userInfo["reason"] as? String == "reconnected" })
        #expect(statisticsB.resynchronizations == resyncs.count)
        await a.stop()
        await b.stop()
    }

    @Test func aListenerCutOffWhileOthersSendReportsExactlyWhatItMissed() async throws {
        let channel = try TestServer.freshChannel("gap")
        let a = try await RunningRelay(channel: channel)
        // b waits long enough before reconnecting that a certainly sends meanwhile.
        let b = try await RunningRelay(channel: channel, applicationName: "relay-test-b", reconnectDelay: .milliseconds(400))
        try a.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try b.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try a.relay.bridge(.testMarker)
        try b.relay.bridge(.testMarker)
        let atB = Inbox(.testEvent, from: b.relay)
        let markers = Inbox(.testMarker, from: b.relay)
        let resyncs = Inbox(Relay.resynchronize, from: b.relay)

        let total = 600
        let sender = Task {
            for n in 1...total {
                try a.relay.post(name: .testEvent, userInfo: ["n": n])
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        try await eventually("the stream under way") { atB.count >= 50 }
        try await terminateBackends(of: "relay-test-b")
        try await sender.value
        try await eventually("b reconnected") { b.reconnected }
        try a.relay.post(name: .testMarker)
        try await eventually("a's marker after b reconnected") { markers.count == 1 }

        let received = atB.values("n")
        let statistics = b.relay.statistics
        print(
            "listener cut off: \(received.count) of \(total) delivered, \(statistics.missed) reported missed,",
            "resynchronize notifications at b: \(resyncs.all.compactMap { $0.userInfo["reason"] as? String })")
        #expect(received == received.sorted())
        #expect(Set(received).count == received.count)
        #expect(statistics.missed > 0)
        #expect(received.count + statistics.missed == total)
        // One gap: everything before it and after it arrived.
        let missing = Set(1...total).subtracting(received).sorted()
        #expect(missing == Array(missing.first!...missing.last!))
        let reasons = resyncs.all.compactMap { $0.userInfo["reason"] as? String }
        #expect(reasons.contains("reconnected"))
        #expect(reasons.contains("missed"))
        let report = try #require(resyncs.all.first { $0.userInfo["reason"] as? String == "missed" })
        #expect(report.userInfo["missed"] as? Int == statistics.missed)
        #expect(report.userInfo["instance"] as? String == a.relay.instanceID)
        await a.stop()
        await b.stop()
    }

    @Test func twoProcessesExchangePostsAndPropertyChanges() async throws {
        let channel = try TestServer.freshChannel("process")
        let relay = try await RunningRelay(channel: channel)
        try relay.relay.bridge(.peerPing, userInfoTypes: ["n": Int.self])
        try relay.relay.bridge(.peerPong, userInfoTypes: ["n": Int.self, "counter": Int.self])
        let counter = PeerCounter()
        try relay.relay.replicate(\.value, of: counter, as: "peer.counter")
        let pongs = Inbox(.peerPong, from: relay.relay)

        let peer = Process()
        peer.executableURL = try TestServer.peerExecutable()
        peer.arguments = [channel.name]
        let input = Pipe()
        let output = Pipe()
        peer.standardInput = input
        peer.standardOutput = output
        try peer.run()
        defer {
            try? input.fileHandleForWriting.close()
            peer.waitUntilExit()
        }
        let ready = try await within(.seconds(60)) {
            String(decoding: output.fileHandleForReading.readData(ofLength: 6), as: UTF8.self)
        }
        #expect(ready == "ready\n")

        for n in 1...300 { try relay.relay.post(name: .peerPing, userInfo: ["n": n]) }
        try await eventually("300 pongs from the other process") { pongs.count == 300 }
        #expect(pongs.values("n") == Array(1...300))
        let peerID = try #require(pongs.all.first.map(\.relayOrigin))
        #expect(peerID != .local)
        #expect(pongs.all.allSatisfy { $0.relayOrigin == peerID })

        // The peer posts "counter" from its observer of the replicated
        // property: a remote value it applied notified it as a local change.
        counter.value = 42
        try await eventually("the peer's observer seeing 42") { pongs.values("counter") == [42] }
        #expect(relay.relay.statistics.dropped == 0)
        await relay.stop()
    }
}

final class PeerCounter: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \PeerCounter.value] }
    @Observed var value = 0
}

extension TestServer {
    /// The RelayTestPeer executable: RELAY_PEER, or beside the test bundle.
    static func peerExecutable() throws -> URL {
        if let path = environment["RELAY_PEER"] { return URL(fileURLWithPath: path) }
        let url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("RelayTestPeer")
        try #require(FileManager.default.isExecutableFile(atPath: url.path), "no RelayTestPeer at \(url.path)")
        return url
    }
}
#endif

#if Relay
import Foundation
import Logging
import ServiceLifecycle
import SwiftKVO
import Testing

@testable import SwiftKVORelay

/// The relay as a swift-service-lifecycle `Service`: a real `ServiceGroup`,
/// shut down by a real SIGTERM sent to this process, against the real server.
/// Serialized: one group at a time traps the signal.
@Suite(.serialized, .enabled(if: TestServer.isConfigured, "needs the PostgreSQL server make relay-test starts"))
struct RelayServiceTests {
    /// A relay made like RunningRelay's, not yet running.
    static func relay(
        channel: RelayChannel, applicationName: String = "relay-service-test",
        configure: (inout RelayConfiguration) -> Void = { _ in }
    ) throws -> Relay {
        var connection = try TestServer.connection()
        connection.options.additionalStartupParameters = [("application_name", applicationName)]
        var configuration = RelayConfiguration(postgres: connection, channel: channel, logger: TestServer.quietLogger)
        configuration.initialReconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(500)
        configure(&configuration)
        return try Relay(configuration: configuration)
    }

    /// Runs `services` in a ServiceGroup that shuts down gracefully on SIGTERM.
    static func group(_ services: [any Service]) -> ServiceGroup {
        ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm], logger: TestServer.quietLogger)
    }

    @Test func sigtermSendsTheWholeQueueBeforeRunReturns() async throws {
        let channel = try TestServer.freshChannel("drain")
        let receiver = try await RunningRelay(channel: channel)
        try receiver.relay.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let inbox = Inbox(.testEvent, from: receiver.relay)

        let sender = try Self.relay(channel: channel) { $0.shutdownTimeout = .seconds(30) }
        try sender.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        let group = Self.group([sender])
        let running = Task { try await group.run() }
        try await within(.seconds(30)) { try await sender.waitUntilListening() }

        // Queue more than one statement carries, then signal while it is still queued.
        let count = 20_000
        for n in 1...count { try sender.post(name: .testEvent, userInfo: ["n": n]) }
        let queuedAtSignal = sender.queuedMessages
        kill(getpid(), SIGTERM)
        try await within(.seconds(60)) { try await running.value }

        let report = try #require(sender.shutdownReport)
        #expect(report.unsent == 0 && report.inFlight == 0 && report.sentEverything)
        #expect(sender.statistics.sent == count)
        #expect(sender.queuedMessages == 0)
        #expect(throws: RelayError.shuttingDown) { try sender.post(name: .testEvent, userInfo: ["n": 0]) }
        try await eventually("all \(count) posts at the receiver") { inbox.count == count }
        #expect(inbox.values("n") == Array(1...count))
        // Reported so the run can be read: how much was still queued when the signal came.
        print("graceful shutdown: \(queuedAtSignal) of \(count) queued at SIGTERM, all sent in \(report.duration)")
        await receiver.stop()
    }

    @Test func aShutdownThatCannotSendRefusesPostsStopsInTimeAndReportsWhatIsLeft() async throws {
        let channel = try TestServer.freshChannel("unsent")
        // A server that is not there: nothing can be sent.
        let recorder = LogRecorder()
        var configuration = RelayConfiguration(
            postgres: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: nil, tls: .disable),
            channel: channel, logger: recorder.logger(level: .info))
        configuration.shutdownTimeout = .milliseconds(300)
        configuration.initialReconnectDelay = .milliseconds(20)
        let sender = try Relay(configuration: configuration)
        try sender.bridge(.testEvent, userInfoTypes: ["n": Int.self])
        try sender.bridge(.testMarker)
        for n in 1...7 { try sender.post(name: .testEvent, userInfo: ["n": n]) }
        try sender.post(name: .testMarker)

        let group = Self.group([sender])
        let clock = ContinuousClock()
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        let signalled = clock.now
        kill(getpid(), SIGTERM)
        // Posts are queued until the group has told the relay; from then on they are refused.
        var queuedBeforeShutdown = 0
        try await eventually("posts refused while shutting down") {
            do {
                try sender.post(name: .testEvent, userInfo: ["n": 8])
                queuedBeforeShutdown += 1
                return false
            } catch {
                return (error as? RelayError) == .shuttingDown
            }
        }
        try await within(.seconds(30)) { try await running.value }
        let took = clock.now - signalled

        let report = try #require(sender.shutdownReport)
        #expect(report.unsent == 8 + queuedBeforeShutdown)
        #expect(
            report.unsentNames == [
                NotificationHub.Name.testEvent.rawValue: 7 + queuedBeforeShutdown,
                NotificationHub.Name.testMarker.rawValue: 1,
            ])
        #expect(!report.sentEverything)
        // Bounded by the configured timeout (and generous slack for a loaded machine).
        #expect(took >= .milliseconds(300) && took < .seconds(10))
        let logged = recorder.all.filter { $0.message == "relay shut down with messages it could not send" }
        #expect(logged.count == 1 && logged.first?.level == .error && logged.first?.metadata["unsent"] == "\(8 + queuedBeforeShutdown)")
    }

    @Test func cancellingWithoutAGracefulShutdownMakesNoReport() async throws {
        let channel = try TestServer.freshChannel("cancel")
        let running = try await RunningRelay(channel: channel)
        await running.stop()
        #expect(running.relay.shutdownReport == nil)
        // Not shut down: posts are still queued (for a later run).
        try running.relay.bridge(.testEvent)
        try running.relay.post(name: .testEvent)
    }
}
#endif

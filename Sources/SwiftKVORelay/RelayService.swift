#if Relay
import Foundation
import Logging
import ServiceLifecycle

/// A relay is a swift-service-lifecycle `Service`: run it in the
/// application's `ServiceGroup`, beside its HTTP server and its
/// `PostgresClient`, and a deploy's SIGTERM shuts it down gracefully.
///
/// ```swift
/// let relay = try Relay(configuration: configuration)
/// let group = ServiceGroup(
///     services: [relay], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
///
/// On graceful shutdown ``Relay/run()``:
/// 1. refuses every new post and replicated assignment:
///    ``Relay/post(name:userInfo:)`` throws ``RelayError/shuttingDown``, a hub
///    post or an assignment is counted in ``RelayStatistics/notSent`` and logged;
/// 2. keeps its connection (reconnecting if need be) and sends what is queued,
///    for at most ``RelayConfiguration/shutdownTimeout``;
/// 3. disconnects, logs a ``RelayShutdownReport`` (at `error` level if
///    anything was left unsent, else `info`), keeps it in
///    ``Relay/shutdownReport``, and returns.
///
/// Remote messages are still received and applied while the queue drains.
/// Cancelling the task before a graceful shutdown stops at once: whatever is
/// queued then is not sent, and no report is made. A cancellation during the
/// shutdown (the group's `maximumGracefulShutdownDuration`) ends the sending
/// early; the report is still made.
extension Relay: Service {
    /// The outcome of the last graceful shutdown, or nil if there was none (yet).
    ///
    /// Thread-safe.
    public var shutdownReport: RelayShutdownReport? { lastShutdownReport }

    /// Runs `connecting` (the connection loop) until the task is cancelled,
    /// or until a graceful shutdown has drained the queue or run out of time.
    func connectUntilShutDown(_ connecting: @escaping @Sendable () async -> Void) async {
        let started = await withTaskGroup(of: ContinuousClock.Instant?.self) { group in
            group.addTask {
                await connecting()
                return nil
            }
            group.addTask {
                do {
                    try await gracefulShutdown()
                } catch {
                    return nil  // cancelled before any graceful shutdown
                }
                return await self.drain()
            }
            var started = await group.next() ?? nil
            group.cancelAll()
            for await result in group { started = started ?? result }
            return started
        }
        if let started { finishShutdown(started: started) }
    }

    /// Refuses new messages, then waits until the queue is empty, the time
    /// is up, or the task is cancelled. Returns when it started.
    private func drain() async -> ContinuousClock.Instant {
        let started = ContinuousClock.now
        closeOutbox()
        configuration.logger.info(
            "relay shutting down gracefully",
            metadata: ["queued": "\(queuedMessages)", "timeout": "\(configuration.shutdownTimeout)"])
        let deadline = started + configuration.shutdownTimeout
        while queuedMessages > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return started
    }

    /// Takes what is left in the queue, logs the report and keeps it.
    private func finishShutdown(started: ContinuousClock.Instant) {
        let (messages, inFlight) = takeUnsent()
        var names: [String: Int] = [:]
        for message in messages {
            names[Self.name(of: message), default: 0] += 1
        }
        let report = RelayShutdownReport(
            unsent: messages.count, inFlight: inFlight, unsentNames: names, duration: .now - started)
        lastShutdownReport = report
        let metadata: Logger.Metadata = [
            "unsent": "\(report.unsent)", "in_flight": "\(report.inFlight)",
            "names": "\(names.sorted { $0.key < $1.key }.map { "\(Wire.loggable($0.key))=\($0.value)" })",
            "duration": "\(report.duration)",
        ]
        if report.unsent > 0 {
            configuration.logger.error("relay shut down with messages it could not send", metadata: metadata)
        } else {
            configuration.logger.info("relay shut down with its queue sent", metadata: metadata)
        }
    }

    /// The notification or property name an own queued message carries.
    private static func name(of message: String) -> String {
        guard
            let object = try? JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any],
            let name = object["n"] as? String
        else { return "?" }
        return name
    }
}

/// What a relay's graceful shutdown could not do (``Relay/shutdownReport``).
///
/// Logged by the relay as its shutdown ends. A value type: safe to pass
/// between threads.
public struct RelayShutdownReport: Hashable, Sendable, CustomStringConvertible {
    /// Messages still queued when the relay stopped, never confirmed sent by
    /// the broker (those of ``inFlight`` included). 0: everything was sent.
    public let unsent: Int
    /// Of ``unsent``, those in a statement the broker had not answered yet:
    /// they may or may not have reached the other instances.
    public let inFlight: Int
    /// How many of ``unsent`` carry each notification or property name.
    public let unsentNames: [String: Int]
    /// How long the shutdown took, from the signal to the report.
    public let duration: Duration

    /// Whether the whole queue was sent.
    public var sentEverything: Bool { unsent == 0 }

    /// The report on one line, for logs.
    public var description: String {
        "RelayShutdownReport(unsent: \(unsent), inFlight: \(inFlight), unsentNames: \(unsentNames), duration: \(duration))"
    }
}
#endif

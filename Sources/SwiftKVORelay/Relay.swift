#if Relay
import DequeModule
import Foundation
import Logging
import SwiftKVO

/// Relays chosen `NotificationHub` notifications and chosen
/// `@Observed` properties between instances of a service, through a broker
/// (PostgreSQL `LISTEN`/`NOTIFY` by default).
///
/// ```swift
/// let relay = try Relay(configuration: RelayConfiguration(postgres: try RelayConfiguration.environment()))
/// try relay.bridge(.orderPlaced)
/// try relay.replicate(\.checkout, of: flags, as: "flags.checkout")
/// let running = Task { await relay.run() }   // connects, reconnects; until cancelled
/// ```
///
/// - Notifications: a local post of a bridged name (through the hub or
///   ``post(name:userInfo:)``) is sent to the other instances, which post it
///   on their hub with this relay as sender and ``RelayOrigin/remote(instance:)``
///   under ``RelayOrigin/userInfoKey``. A relay never delivers its own messages
///   back, and never forwards a remote notification again.
/// - Properties: a local assignment of a replicated property is sent, as the
///   entries it changed; a remote one is merged locally as the property's
///   ``ReplicationPolicy`` says (observers are notified as for any change)
///   and not sent again.
/// - After a reconnect, when another instance's sequence numbers show
///   that messages were missed, or when another instance restarted, the
///   relay reloads replicated values from its state table
///   (``RelayConfiguration/stateTable``) and posts ``resynchronize``:
///   reload any other state.
///
/// See the DocC article *Relaying between instances* for the delivery guarantees.
///
/// ## Thread safety and callbacks
/// Every method may be called from any thread. Remote notifications are
/// posted, and remote property values assigned, from a task of ``run()``,
/// one message at a time, each sender's in the order the broker delivered
/// them (senders take turns, so a flooding one cannot hold up the others):
/// hub observers run on that task, synchronously; a replicated property is
/// assigned under its ``ReplicationIsolation`` — by default on that task
/// too, so do not assign it concurrently from other threads without your
/// own synchronization (as for any `@Observed` property), or give the relay
/// that synchronization: your lock or your actor.
///
/// Sending waits for nothing: a post (or a replicated assignment) hands its
/// message to the transport on the posting thread when no statement is in
/// flight, and otherwise queues it for the statement that starts when the
/// one in flight completes (up to 256 messages each).
public final class Relay: Sendable {
    /// Posted (with the relay as sender) after the relay reconnects, when
    /// another instance's messages were lost, and when another instance
    /// restarted (a new incarnation, or a sequence number that jumped beyond
    /// ``RelayConfiguration/maximumSequenceJump``; also when it went on with
    /// an incarnation after a newer one was heard,
    /// ``RelayStatistics/incarnationConflicts``): whatever was sent meanwhile
    /// may be gone, so reload the state you keep in sync.
    ///
    /// When the relay keeps state (``RelayConfiguration/stateTable``) and
    /// replicates properties, it first loads their current values (applied as
    /// remote changes), then posts: only notifications are lost across the gap.
    ///
    /// User info: `"reason"` — `"reconnected"`, `"missed"` or `"restarted"`;
    /// `"updated"` — the replicated names (`[String]`, sorted) whose values the
    /// load brought up to date (empty if none changed or nothing was loaded).
    /// For `"missed"` and `"restarted"` also `"instance"` (the sender's id);
    /// for `"missed"` also `"missed"` (how many of its messages, an `Int`,
    /// since the last notification for it) and `"restarted"` (`true` if it
    /// also restarted meanwhile). For one instance these come at most once per
    /// ``RelayConfiguration/resynchronizationInterval``: what happens within
    /// it is reported, summed, when it ends.
    public static let resynchronize = NotificationHub.Name("SwiftKVORelay.resynchronize")

    /// The most messages sent in one statement.
    static let batchLimit = 256

    /// This relay's configuration.
    public let configuration: RelayConfiguration

    let state: LockedState<State>
    /// This relay's incarnation (``Incarnation``): its start time and random
    /// bits, so that an instance restarted with the same
    /// ``RelayConfiguration/instanceID`` starts a new sequence space, which
    /// receivers order after the one before.
    package let incarnation: UInt64
    /// What this relay's messages start with, up to their sequence number:
    /// one comparison tells an own message coming back from the broker.
    let wirePrefix: String
    /// Received messages not yet handled (``intake(_:)``, then ``receive(_:)``).
    let backlog: LockedState<ReceiveBacklog>
    /// Rings when the backlog gets a message; holds at most one ring.
    private let doorbell: AsyncStream<Void>
    let ring: AsyncStream<Void>.Continuation
    /// Decodes every incoming message (its user info holds the name resolver).
    let decoder = JSONDecoder()
    /// Rings when a state load is asked for; holds at most one ring (StateLoading.swift).
    let loaderBell: AsyncStream<Void>
    let ringLoader: AsyncStream<Void>.Continuation
    /// Rows loaded from the state table, waiting for the receiving task.
    let stateInbox = LockedState(StateInbox())

    /// A message waiting to be sent; for a property value, what its state-table row records.
    struct Outgoing {
        var message: String
        var entry: EntryID?
        var stamp: UInt64 = 0
    }

    struct State {
        var outbox = Deque<Outgoing>()
        /// The current connection's publisher, once it is listening.
        var publisher: (any RelayPublisher)?
        /// Ends the current connection when a statement fails, so that its
        /// messages are sent again on the next one.
        var publishFailed: AsyncStream<any Error>.Continuation?
        /// Counts connects and disconnects: the completion of a statement
        /// started on an earlier connection is ignored.
        var connection: UInt64 = 0
        /// How many of the outbox's first messages the statement in flight
        /// carries; 0 when none is in flight.
        var publishing = 0
        var nextSequence: UInt64 = 1
        var statistics = RelayStatistics()
        var bridges: [String: Bridge] = [:]
        var replications: [String: any Replicating] = [:]
        /// The last write of each entry of a replicated name: (stamp, instance).
        var lastWrites: [EntryID: (stamp: UInt64, instance: String)] = [:]
        /// The replicated names whose first load is done (or that need none):
        /// their local writes are sent.
        var loadedNames: Set<String> = []
        /// Entries written before their name's first load, sent after it.
        var heldEntries: [String: Set<String>] = [:]
        /// Whether the relay listened and loaded its replicated values once.
        var isReady = false
        /// The highest stamp issued or seen: local stamps go above it.
        var clock: UInt64 = 0
        /// Per other instance: the sequence numbers heard, when last heard.
        var instances: InstanceTable
        /// Holds back warnings caused by what arrives (``warn(_:metadata:)``).
        var warnings = WarningLimiter(interval: Relay.warningInterval)
        /// Instances with a coalesced resynchronization not yet posted.
        var pendingResynchronizations: Set<String> = []
        /// Hashes of messages sent and not yet seen coming back (bounded, oldest forgotten first).
        var echoes: Set<Int> = []
        var echoOrder = Deque<Int>()
        var isListening = false
        var hasListened = false
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextWaiter: UInt64 = 0
        /// The state load asked for and not yet started.
        var stateRequest = StateRequest()
        /// Whether the current connection's first state load is done (or none was needed).
        var stateIsCurrent = false
        /// Set by a graceful shutdown (RelayService.swift): new messages are refused.
        var closed = false
        var shutdownReport: RelayShutdownReport?
    }

    struct Bridge {
        let name: NotificationHub.Name
        let schema: UserInfoSchema
        let token: ObservationToken
    }

    /// A relay with `configuration`. It neither connects nor sends until
    /// ``run()`` runs; posts made before are queued (up to
    /// ``RelayConfiguration/outboxCapacity``).
    ///
    /// - Throws: ``RelayError/invalidConfiguration(_:)`` for an instance id
    ///   that receivers would drop (empty, over 128 bytes, or with control or
    ///   format characters; see ``RelayConfiguration/instanceID``), or limits
    ///   that cannot work together.
    public init(configuration: RelayConfiguration) throws(RelayError) {
        try Self.validate(configuration)
        self.configuration = configuration
        incarnation = Incarnation.make(wallClockMilliseconds: Self.wallClockMicroseconds() / 1000)
        wirePrefix = Wire.prefix(instance: configuration.instanceID, incarnation: incarnation)
        // Signed, an instance is forgotten only once idle for twice the skew
        // (and a second): a new instance's messages are then never taken for
        // replays of the forgotten one's (see InstanceTable.forgottenHeard).
        let idleTimeout =
            configuration.signing == nil
            ? configuration.instanceIdleTimeout
            : max(configuration.instanceIdleTimeout, configuration.maximumClockSkew * 2 + .seconds(1))
        state = LockedState(
            State(
                instances: InstanceTable(
                    capacity: configuration.maximumTrackedInstances, idleTimeout: idleTimeout,
                    admitsBusy: configuration.signing == nil)))
        backlog = LockedState(
            ReceiveBacklog(
                capacity: configuration.receiveBacklogBytes, perSender: configuration.receiveBacklogBytesPerSender))
        (doorbell, ring) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (loaderBell, ringLoader) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        decoder.userInfo[Wire.Resolver.codingKey] = resolver
    }

    private static func validate(_ configuration: RelayConfiguration) throws(RelayError) {
        let id = configuration.instanceID
        guard !id.isEmpty else { throw .invalidConfiguration("instanceID is empty") }
        guard id.utf8.count <= Wire.maximumInstanceIDBytes else {
            throw .invalidConfiguration(
                "instanceID has \(id.utf8.count) bytes; at most \(Wire.maximumInstanceIDBytes) are accepted")
        }
        guard Wire.isValidInstanceID(id) else {
            throw .invalidConfiguration(
                "instanceID \"\(Wire.loggable(id))\" contains control, format or unassigned characters")
        }
        guard configuration.outboxCapacity > 0, configuration.maximumTrackedInstances > 0,
            configuration.receiveBacklogBytes > 0, configuration.receiveBacklogBytesPerSender > 0
        else {
            throw .invalidConfiguration(
                "outboxCapacity, maximumTrackedInstances and the receive backlog's sizes must be positive")
        }
        guard configuration.maximumSequenceJump >= UInt64(configuration.outboxCapacity) else {
            throw .invalidConfiguration("maximumSequenceJump must be at least outboxCapacity (a resend reaches that far back)")
        }
        guard configuration.maximumClockSkew >= .zero, configuration.resynchronizationInterval > .zero else {
            throw .invalidConfiguration("maximumClockSkew must not be negative, resynchronizationInterval must be positive")
        }
        try configuration.signing?.validate()
    }

    deinit {
        for bridge in state.withLock({ $0.bridges.values }) { bridge.token.invalidate() }
        for replication in state.withLock({ $0.replications.values }) { replication.stop() }
    }

    /// This relay's id on the wire (``RelayConfiguration/instanceID``).
    public var instanceID: String { configuration.instanceID }

    /// A snapshot of the relay's counters.
    public var statistics: RelayStatistics { state.withLock { $0.statistics } }

    /// Whether the relay is connected and listening now.
    public var isListening: Bool { state.withLock { $0.isListening } }

    // MARK: Bridging notifications

    /// Sends local posts of `name` to the other instances, and posts theirs here.
    ///
    /// Every user-info value of a post must be `Encodable` (a post that is not,
    /// or whose message would exceed the broker's limit, is not sent and is
    /// counted in ``RelayStatistics/notSent``; use ``post(name:userInfo:)`` to
    /// get that as an error). The post's sender object stays local.
    ///
    /// - Parameters:
    ///   - name: The notification name to bridge.
    ///   - userInfoTypes: What each user-info key decodes as on arrival (e.g.
    ///     `["count": Int.self, "order": Order.self]`). A message with a key
    ///     not listed, or a value that does not decode, is dropped and counted
    ///     (``RelayStatistics/droppedWrongType``). Empty (the default): values
    ///     arrive as JSON maps them — `Bool`, `Int`, `Double`, `String`,
    ///     `[any Sendable]`, `[String: any Sendable]`; nulls are left out.
    /// - Throws: ``RelayError/duplicateName(_:)`` if `name` is already bridged;
    ///   ``RelayError/registration(_:)`` if the hub refused the registration.
    public func bridge(
        _ name: NotificationHub.Name, userInfoTypes: [String: any (Codable & Sendable).Type] = [:]
    ) throws(RelayError) {
        let token: ObservationToken
        do {
            token = try NotificationHub.default.addObserver(forName: name) { [weak self] note in
                self?.forward(note)
            }
        } catch {
            throw .registration(error)
        }
        let schema = UserInfoSchema(types: userInfoTypes.mapValues { $0 })
        let added = state.withLock { state in
            guard state.bridges[name.rawValue] == nil, state.replications[name.rawValue] == nil else { return false }
            state.bridges[name.rawValue] = Bridge(name: name, schema: schema, token: token)
            return true
        }
        guard added else {
            token.invalidate()
            throw .duplicateName(name.rawValue)
        }
    }

    /// Stops bridging `name`. Returns `false` if it was not bridged.
    @discardableResult
    public func unbridge(_ name: NotificationHub.Name) -> Bool {
        guard let bridge = state.withLock({ $0.bridges.removeValue(forKey: name.rawValue) }) else { return false }
        bridge.token.invalidate()
        return true
    }

    /// Posts `name` on this process's hub and sends it to the other
    /// instances, or throws without doing either.
    ///
    /// Local observers get the notification synchronously, on this thread,
    /// with no sender and ``RelayOrigin/local`` under ``RelayOrigin/userInfoKey``.
    ///
    /// - Throws: ``RelayError/notBridged(_:)``,
    ///   ``RelayError/notEncodable(key:)``,
    ///   ``RelayError/payloadTooLarge(bytes:limit:)`` (nothing is truncated),
    ///   ``RelayError/outboxFull(capacity:)``.
    public func post(name: NotificationHub.Name, userInfo: [String: any Sendable] = [:]) throws(RelayError) {
        guard state.withLock({ $0.bridges[name.rawValue] != nil }) else { throw .notBridged(name.rawValue) }
        try enqueue(encodePost(name, userInfo))
        var local = userInfo
        local[RelayOrigin.userInfoKey] = RelayOrigin.local
        NotificationHub.default.post(name: name, object: nil, userInfo: local)
    }

    /// A hub post of a bridged name: sent unless a relay delivered or sent it already.
    private func forward(_ note: HubNotification) {
        guard note.userInfo[RelayOrigin.userInfoKey] == nil else { return }
        do {
            try enqueue(encodePost(note.name, note.userInfo))
        } catch {
            state.withLock { $0.statistics.notSent += 1 }
            configuration.logger.warning(
                "relay did not send a post",
                metadata: [
                    "name": "\(Wire.loggable(note.name.rawValue))",
                    "error": "\(Wire.loggableError("\(error)"))",
                ])
        }
    }

    // MARK: Connection

    /// Connects, listens, sends and receives until the task is cancelled;
    /// reconnects after a lost or refused connection (or a statement that
    /// failed), with exponential backoff
    /// (``RelayConfiguration/initialReconnectDelay`` doubling up to
    /// ``RelayConfiguration/maximumReconnectDelay``, with jitter). After each
    /// reconnect it posts ``resynchronize``. Run it once per relay.
    ///
    /// Under a swift-service-lifecycle `ServiceGroup` it also returns after a
    /// graceful shutdown: it refuses new messages, sends what is queued for at
    /// most ``RelayConfiguration/shutdownTimeout``, and reports what it could
    /// not (``shutdownReport``; see <doc:RunningAsAService>).
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.reportCoalescedResynchronizations() }
            group.addTask { await self.handleReceived() }
            group.addTask { await self.loadStateOnRequest() }
            group.addTask { await self.reportMetrics() }
            await self.connectUntilShutDown { await self.connectUntilCancelled() }
            group.cancelAll()
        }
    }

    /// Handles received messages, one at a time, until cancelled.
    private func handleReceived() async {
        defer { closeStateInbox() }
        for await _ in doorbell {
            await applyLoadedState()
            var handled = 0
            while let payload = backlog.withLock({ $0.pop() }) {
                if let apply = receive(payload) { await apply() }
                handled += 1
                // Loaded values wait for at most this many messages of a flood.
                if handled % 256 == 0 { await applyLoadedState() }
            }
        }
    }

    /// A message from the transport: queued for ``handleReceived()``, or shed
    /// and counted if the backlog is full. Cheap, so that the transport's own
    /// buffer never grows.
    package func intake(_ payload: String) {
        guard payload.utf8.count <= configuration.transport.maximumPayloadBytes else { return drop(.oversized) }
        guard backlog.withLock({ $0.push(payload) }) else {
            return state.withLock { $0.statistics.droppedShed.addSaturating(1) }
        }
        ring.yield()
    }

    /// Posts coalesced resynchronizations once their instance's interval is
    /// over: checked four times per interval, until cancelled.
    private func reportCoalescedResynchronizations() async {
        let period = configuration.resynchronizationInterval / 4
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: period)
            } catch {
                return
            }
            flushResynchronizations(now: .now)
        }
    }

    private func connectUntilCancelled() async {
        let logger = configuration.logger
        var delay = configuration.initialReconnectDelay
        while !Task.isCancelled {
            let (failures, publishFailed) = AsyncStream<any Error>.makeStream()
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await self.configuration.transport.run(
                            channel: self.configuration.channel, logger: logger,
                            connected: { self.listening(publisher: self.measured($0), publishFailed: publishFailed) },
                            receive: { self.intake($0) })
                    }
                    group.addTask {
                        for await error in failures { throw error }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                if !Task.isCancelled {
                    logger.warning(
                        "relay connection ended",
                        metadata: ["error": "\(Wire.loggableError(RelayErrorDescription.describe(error)))"])
                }
            }
            publishFailed.finish()
            let wasListening = state.withLock { state in
                defer {
                    state.isListening = false
                    state.publisher = nil
                    state.publishFailed = nil
                    state.publishing = 0
                    state.connection += 1
                    state.stateIsCurrent = false
                }
                if state.isListening { state.statistics.disconnects.addSaturating(1) }
                return state.isListening
            }
            if wasListening { delay = configuration.initialReconnectDelay }
            if Task.isCancelled { break }
            let jittered = delay * Double.random(in: 0.5...1.0)
            logger.info("relay reconnecting", metadata: ["delay": "\(jittered)"])
            try? await Task.sleep(for: jittered)
            delay = min(delay * 2, configuration.maximumReconnectDelay)
        }
    }

    /// The subscription is in place: start sending, load the replicated
    /// values if the relay keeps state, then release waiters and after a gap
    /// tell the application to resynchronize.
    private func listening(publisher: any RelayPublisher, publishFailed: AsyncStream<any Error>.Continuation) {
        let (waiters, reconnected, statement, loads) = state.withLock { state in
            state.isListening = true
            state.connection += 1
            state.publisher = publisher
            state.publishFailed = publishFailed
            state.publishing = 0
            let reconnected = state.hasListened
            state.hasListened = true
            let statement = Self.nextStatement(&state)
            // A load also ends the first load of names whose writes wait
            // for it when the connection turns out to keep no state.
            if configuration.stateTable != nil, !state.replications.isEmpty {
                // Released, and the resynchronization posted, once the load is done.
                state.stateIsCurrent = false
                state.stateRequest.connection = state.connection
                state.stateRequest.reconnected = state.stateRequest.reconnected || reconnected
                return ([CheckedContinuation<Void, any Error>](), false, statement, true)
            }
            state.stateIsCurrent = true
            state.isReady = true
            defer { state.waiters.removeAll() }
            return (Array(state.waiters.values), reconnected, statement, false)
        }
        configuration.logger.info("relay listening", metadata: ["channel": "\(configuration.channel)"])
        if let statement { publish(statement) }
        if loads { ringLoader.yield() }
        for waiter in waiters { waiter.resume() }
        if reconnected {
            state.withLock { $0.statistics.resynchronizations.addSaturating(1) }
            postResynchronize(["reason": "reconnected", "updated": [String]()])
        }
    }

    /// Returns once the relay is connected and listening (at once if it is)
    /// and, if it keeps state (``RelayConfiguration/stateTable``), has loaded
    /// the current values of the properties it replicates: after it returns
    /// at start, they hold what every instance wrote, merged. A load that
    /// fails ends the connection; this waits for the next one's. Unlike
    /// ``waitUntilReady()``, it waits again after a disconnect.
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitUntilListening() async throws {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { state in
                    if (state.isListening && state.stateIsCurrent) || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
            try Task.checkCancellation()
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: CancellationError())
        }
    }

    func postResynchronize(_ userInfo: [String: any Sendable]) {
        var userInfo = userInfo
        userInfo[RelayOrigin.userInfoKey] = RelayOrigin.local
        NotificationHub.default.post(name: Self.resynchronize, object: self, userInfo: userInfo)
    }
}

// MARK: Cost probes

// Each step of a message's way on its own, for RelayBenchmarks' cost breakdown.
extension Relay {
    /// The message a post of `name` is sent as, with sequence number `sequence`.
    package func message(
        posting name: NotificationHub.Name, userInfo: [String: any Sendable], sequence: UInt64
    ) throws(RelayError) -> String {
        wireMessage(sequence: sequence, body: try encodePost(name, userInfo))
    }

    /// Whether `payload` decodes as a message (nothing else is done with it).
    package func decodes(_ payload: String) -> Bool {
        decode(payload) != nil
    }
}

// MARK: Shutdown and metrics

// What RelayService.swift and RelayMetrics.swift read and change of the relay's state.
extension Relay {
    /// Refuses every new message from now on (``RelayError/shuttingDown``).
    package func closeOutbox() {
        state.withLock { $0.closed = true }
    }

    /// Messages queued and not yet accepted by the broker (those in flight included).
    package var queuedMessages: Int { state.withLock { $0.outbox.count } }

    /// Empties the queue: the messages never confirmed sent, and how many of
    /// them were in flight (their fate unknown).
    package func takeUnsent() -> (messages: [String], inFlight: Int) {
        state.withLock { state in
            defer { state.outbox.removeAll() }
            return (state.outbox.map(\.message), state.publishing)
        }
    }

    /// The report of the graceful shutdown, once it is over.
    package var lastShutdownReport: RelayShutdownReport? {
        get { state.withLock { $0.shutdownReport } }
        set { state.withLock { $0.shutdownReport = newValue } }
    }

    /// The counters, the queue's depth and the connection's state at one instant.
    package var metricsSnapshot: (statistics: RelayStatistics, queued: Int, listening: Bool) {
        state.withLock { ($0.statistics, $0.outbox.count, $0.isListening) }
    }
}
#endif

#if Relay
// Where the relay's time goes: each step of a message's way timed on its own,
// in the same run as the end-to-end comparison.
//
// In process, no server: encoding, decoding, the receive path (decode, checks,
// hub post), skipping an own message, a hub post alone; over an in-memory
// broker (the RelayTransport seam): post → the transport's publish (encoding,
// queueing, the hop to the sending side) and post → the other relay's
// observer (everything the relay does, minus the server). Against the server:
// a PostgresTransport publish against the same pg_notify statement sent raw,
// each waited for (the publishing machinery per statement).
import Foundation
import Histogram
import Logging
import PostgresNIO
import SwiftKVO
import SwiftKVORelay
import Synchronization

extension NotificationHub.Name {
    static let benchProbe: Self = "relay.bench.probe"
}

/// Median nanoseconds per call of `body`: `samples` timings of `batch` calls each.
func perCall(batch: Int, samples: Int, _ body: (Int) throws -> Void) rethrows -> Double {
    var timings: [Double] = []
    for sample in 0..<samples {
        let start = nanoseconds()
        for index in 0..<batch { try body(sample * batch + index) }
        timings.append(Double(nanoseconds() - start) / Double(batch))
    }
    return median(timings)
}

/// The in-process steps, in nanoseconds per message.
struct InProcessCosts {
    var encode = 0.0
    var decode = 0.0
    var receive = 0.0
    var ownSkip = 0.0
    var hubPost = 0.0
}

func measureInProcess(setup: Setup, quick: Bool) throws -> InProcessCosts {
    let batch = quick ? 200 : 1000
    let samples = quick ? 5 : 9
    let types: [String: any (Codable & Sendable).Type] = ["t": Int.self, "pad": String.self]
    let sender = try Relay(configuration: RelayConfiguration(postgres: setup.connection, logger: setup.logger))
    let receiver = try Relay(configuration: RelayConfiguration(postgres: setup.connection, logger: setup.logger))
    try sender.bridge(.benchProbe, userInfoTypes: types)
    try receiver.bridge(.benchProbe, userInfoTypes: types)
    let userInfo: [String: any Sendable] = ["t": Int(nanoseconds()), "pad": setup.padding]
    let observer = Receipts()
    try NotificationHub.default.addObserver(observer, name: .benchProbe, object: receiver) { _, _ in }
    defer { NotificationHub.default.removeObserver(observer) }

    var costs = InProcessCosts()
    costs.encode = try perCall(batch: batch, samples: samples) { index in
        _ = try sender.message(posting: .benchProbe, userInfo: userInfo, sequence: UInt64(index + 1))
    }
    let messages = try (0..<batch * samples).map { index in
        try sender.message(posting: .benchProbe, userInfo: userInfo, sequence: UInt64(index + 1))
    }
    costs.decode = perCall(batch: batch, samples: samples) { index in
        precondition(receiver.decodes(messages[index]))
    }
    costs.receive = perCall(batch: batch, samples: samples) { index in _ = receiver.receive(messages[index]) }
    precondition(receiver.statistics.delivered == messages.count, "the probe's messages were not all delivered")
    let own = try receiver.message(posting: .benchProbe, userInfo: userInfo, sequence: 1)
    costs.ownSkip = perCall(batch: batch, samples: samples) { _ in _ = receiver.receive(own) }
    var remote = userInfo
    remote[RelayOrigin.userInfoKey] = RelayOrigin.remote(instance: sender.instanceID)
    costs.hubPost = perCall(batch: batch, samples: samples) { _ in
        NotificationHub.default.post(name: .benchProbe, object: receiver, userInfo: remote)
    }
    return costs
}

// MARK: In-memory broker

/// A broker in memory: a publish reaches every connected subscriber (the
/// publisher's own connection too, as with PostgreSQL), in order.
final class LoopbackBroker: Sendable {
    private let subscribers = LockedState<[Int: AsyncStream<String>.Continuation]>([:])
    private let nextID = Atomic<Int>(0)
    /// When the current post started (set by the benchmark), and the receipts
    /// of the transport's publish calls against it.
    let postStarted = Atomic<UInt64>(0)
    let published = Receipts()

    func subscribe(_ continuation: AsyncStream<String>.Continuation) -> Int {
        let id = nextID.add(1, ordering: .relaxed).newValue
        subscribers.withLock { $0[id] = continuation }
        return id
    }

    func unsubscribe(_ id: Int) {
        subscribers.withLock { $0.removeValue(forKey: id) }?.finish()
    }

    func publish(_ messages: [String]) {
        published.received(sentAt: postStarted.load(ordering: .relaxed))
        for subscriber in subscribers.withLock({ Array($0.values) }) {
            for message in messages { subscriber.yield(message) }
        }
    }
}

struct LoopbackTransport: RelayTransport {
    let broker: LoopbackBroker

    var maximumPayloadBytes: Int { PostgresTransport.payloadLimit }

    func run(
        channel: RelayChannel, logger: Logger,
        connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws {
        let (messages, continuation) = AsyncStream<String>.makeStream()
        let id = broker.subscribe(continuation)
        defer { broker.unsubscribe(id) }
        connected(LoopbackPublisher(broker: broker))
        for await message in messages { receive(message) }
    }
}

struct LoopbackPublisher: RelayPublisher {
    let broker: LoopbackBroker

    func publish(_ messages: [String], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        broker.publish(messages)
        completion(.success(()))
    }
}

/// Two relays over a ``LoopbackBroker``: everything the relay does, without a server.
final class LoopbackContender: Contender {
    let name = "relay over an in-memory broker"
    let receipts = Receipts()
    let broker = LoopbackBroker()
    let sender: Relay
    let receiver: Relay
    let padding: String
    private let tasks: [Task<Void, Never>]

    init(setup: Setup) async throws {
        padding = setup.padding
        let transport = LoopbackTransport(broker: broker)
        sender = try Relay(configuration: holdingABurst(RelayConfiguration(transport: transport, logger: setup.logger)))
        let receiver = try Relay(
            configuration: holdingABurst(RelayConfiguration(transport: transport, logger: setup.logger)))
        self.receiver = receiver
        let types: [String: any (Codable & Sendable).Type] = ["t": Int.self, "pad": String.self]
        try sender.bridge(.benchLoopback, userInfoTypes: types)
        try receiver.bridge(.benchLoopback, userInfoTypes: types)
        tasks = [sender, receiver].map { relay in Task { await relay.run() } }
        let receipts = receipts
        try NotificationHub.default.addObserver(receipts, name: .benchLoopback, object: receiver) { receipts, note in
            receipts.received(sentAt: UInt64(note.userInfo["t"] as? Int ?? 0))
        }
        try await sender.waitUntilListening()
        try await receiver.waitUntilListening()
    }

    func send(sentAt: UInt64) async throws {
        broker.postStarted.store(sentAt, ordering: .relaxed)
        try sender.post(name: .benchLoopback, userInfo: ["t": Int(sentAt), "pad": padding])
    }

    func sendBurst(_ count: Int) async throws {
        for _ in 0..<count {
            try sender.post(name: .benchLoopback, userInfo: ["t": Int(nanoseconds()), "pad": padding])
        }
    }
}

extension NotificationHub.Name {
    static let benchLoopback: Self = "relay.bench.loopback"
}

// MARK: Publishing, per statement

/// One PostgresTransport connection's publisher, and a raw connection that
/// listens on its own channel as the transport's does: each statement waited for.
final class PublishProbe: Sendable {
    let publisher: any RelayPublisher
    let raw: PostgresConnection
    let rawChannel: String
    let setup: Setup
    private let task: Task<Void, Never>
    private let rawTask: Task<Void, any Error>

    init(suffix: some StringProtocol, setup: Setup) async throws {
        self.setup = setup
        let transport = PostgresTransport(configuration: setup.connection)
        let channel = try RelayChannel("bench_pub_\(suffix)")
        let (publishers, connected) = AsyncStream<any RelayPublisher>.makeStream()
        task = Task {
            try? await transport.run(
                channel: channel, logger: setup.logger, connected: { connected.yield($0) }, receive: { _ in })
        }
        var iterator = publishers.makeAsyncIterator()
        guard let publisher = await iterator.next() else { throw CancellationError() }
        self.publisher = publisher
        let raw = try await PostgresConnection.connect(configuration: setup.connection, id: 3, logger: setup.logger)
        self.raw = raw
        let rawChannel = "bench_pubraw_\(suffix)"
        self.rawChannel = rawChannel
        let (ready, isReady) = AsyncStream<Void>.makeStream()
        rawTask = Task {
            try await raw.listen(on: rawChannel) { notifications in
                isReady.yield()
                for try await _ in notifications {}
            }
        }
        var readiness = ready.makeAsyncIterator()
        _ = await readiness.next()
    }

    /// Closed loop, `count` statements each way alternately: (raw, transport) histograms.
    func roundTrips(count: Int) async throws -> (raw: Histogram<UInt64>, transport: Histogram<UInt64>) {
        var raw = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        var transport = raw
        for _ in 0..<count {
            let message = "\(nanoseconds());\(setup.padding)"
            var start = nanoseconds()
            let rows = try await self.raw.query("SELECT pg_notify(\(rawChannel), \(message))", logger: setup.logger)
            for try await _ in rows {}
            _ = raw.record(nanoseconds() - start)
            start = nanoseconds()
            try await withCheckedThrowingContinuation { continuation in
                publisher.publish([message]) { continuation.resume(with: $0) }
            }
            _ = transport.record(nanoseconds() - start)
        }
        return (raw, transport)
    }
}

// MARK: Counting statements

/// Statements published and the messages in them.
final class StatementCounts: Sendable {
    private struct State {
        var statements = 0
        var messages = 0
        /// Messages in completed statements, since the start.
        var completed = 0
        var waiter: (messages: Int, continuation: CheckedContinuation<Void, Never>)?
    }

    private let state = LockedState(State())

    func started(_ messages: Int) {
        state.withLock {
            $0.statements += 1
            $0.messages += messages
        }
    }

    func completed(_ messages: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.completed += messages
            guard let waiter = state.waiter, state.completed >= waiter.messages else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Returns once statements of `messages` messages in all have completed.
    func waitUntilCompleted(_ messages: Int) async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.completed >= messages { return true }
                state.waiter = (messages, continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Starts counting statements and messages (for ``meanBatch``) again.
    func reset() {
        state.withLock {
            $0.statements = 0
            $0.messages = 0
        }
    }

    /// Messages per statement since the last reset.
    var meanBatch: Double {
        state.withLock { Double($0.messages) / Double(max($0.statements, 1)) }
    }
}

/// A transport that counts its publisher's statements and their messages:
/// how the relay batches in a burst (so that raw is also measured at that
/// size), and when its statements have completed; and that times each
/// message's receive path where it runs, between the server's messages.
struct CountingTransport: RelayTransport {
    let base: any RelayTransport
    let counts: StatementCounts
    /// How long each call of the relay's receive took.
    let receiving: Receipts

    var maximumPayloadBytes: Int { base.maximumPayloadBytes }

    func run(
        channel: RelayChannel, logger: Logger,
        connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws {
        try await base.run(
            channel: channel, logger: logger,
            connected: { connected(CountingPublisher(base: $0, counts: counts)) },
            receive: { payload in
                let start = nanoseconds()
                receive(payload)
                receiving.received(sentAt: start)
            })
    }
}

struct CountingPublisher: RelayPublisher {
    let base: any RelayPublisher
    let counts: StatementCounts

    func publish(_ messages: [String], completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        counts.started(messages.count)
        base.publish(messages) { result in
            if case .success = result { counts.completed(messages.count) }
            completion(result)
        }
    }
}

// MARK: Raw transport, the relay's work

extension NotificationHub.Name {
    static let benchRawWork: Self = "relay.bench.rawwork"
}

/// Raw PostgresNIO with its sender listening, carrying the relay's messages:
/// the sender encodes each as a relay does, the receiver hands it to a
/// relay's receive path (read, checks, hub post), and the sender's own copy
/// to the sending relay's (skipped). Everything of the relay but its sending
/// machinery (queue, statements, completions) and PostgresTransport.
final class RawWithRelayWork: Contender {
    let name = "raw, sender listening, the relay's encoding and receive"
    let receipts = Receipts()
    let sender: PostgresConnection
    let channel: String
    let setup: Setup
    let encoding: Relay
    let sequence = Atomic<UInt64>(0)
    /// Each message's encoding on the sender, and its receive path on the receiver, where they run.
    let encodingTimes = Receipts()
    let receivingTimes = Receipts()
    private let listening: [Task<Void, any Error>]

    init(suffix: some StringProtocol, setup: Setup) async throws {
        self.setup = setup
        let channel = "bench_rawwork_\(suffix)"
        self.channel = channel
        let types: [String: any (Codable & Sendable).Type] = ["t": Int.self, "pad": String.self]
        let encoding = try Relay(configuration: RelayConfiguration(postgres: setup.connection, logger: setup.logger))
        let decoding = try Relay(configuration: RelayConfiguration(postgres: setup.connection, logger: setup.logger))
        try encoding.bridge(.benchRawWork, userInfoTypes: types)
        try decoding.bridge(.benchRawWork, userInfoTypes: types)
        self.encoding = encoding
        let receipts = receipts
        try NotificationHub.default.addObserver(receipts, name: .benchRawWork, object: decoding) { receipts, note in
            receipts.received(sentAt: UInt64(note.userInfo["t"] as? Int ?? 0))
        }
        let sender = try await PostgresConnection.connect(configuration: setup.connection, id: 4, logger: setup.logger)
        self.sender = sender
        let listener = try await PostgresConnection.connect(
            configuration: setup.connection, id: 5, logger: setup.logger)
        let (ready, isReady) = AsyncStream<Void>.makeStream()
        let receivingTimes = receivingTimes
        listening = [
            Task {
                try await listener.listen(on: channel) { notifications in
                    isReady.yield()
                    for try await notification in notifications {
                        let start = nanoseconds()
                        _ = decoding.receive(notification.payload)
                        receivingTimes.received(sentAt: start)
                    }
                }
            },
            Task {
                try await sender.listen(on: channel) { notifications in
                    isReady.yield()
                    for try await notification in notifications { _ = encoding.receive(notification.payload) }
                }
            },
        ]
        var readiness = ready.makeAsyncIterator()
        for _ in listening { _ = await readiness.next() }
    }

    func send(sentAt: UInt64) async throws {
        let message = try encoding.message(
            posting: .benchRawWork, userInfo: ["t": Int(sentAt), "pad": setup.padding],
            sequence: sequence.add(1, ordering: .relaxed).newValue)
        encodingTimes.received(sentAt: sentAt)
        let rows = try await sender.query("SELECT pg_notify(\(channel), \(message))", logger: setup.logger)
        for try await _ in rows {}
    }

    func sendBurst(_ count: Int) async throws {
        for _ in 0..<count { try await send(sentAt: nanoseconds()) }
    }
}
#endif

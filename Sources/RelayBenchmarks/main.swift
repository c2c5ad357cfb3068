#if Relay
// Relay against raw PostgresNIO LISTEN/NOTIFY, in one run, between two
// connections to the server in PG* environment variables (`make relay-bench`
// starts a private one). Numbers on stdout, progress on stderr.
//
// Latency: closed loop, one message in flight: the time from the sender's
// call (relay.post, or the raw pg_notify query) to the receiving side's
// handler (a hub observer, or the raw notification loop), on one monotonic
// clock. Throughput: N messages sent as fast as the sender goes; time until
// the last one is received. Raw and relay alternate, every 100 messages for
// latency and burst by burst for throughput, so drift on a shared machine
// hits both. Each round also times the relay's steps one by one
// (Breakdown.swift): where its extra time goes.
import Foundation
import Histogram
import Logging
import NIOCore
import PostgresNIO
import SwiftKVO
import SwiftKVORelay
import Synchronization

let quick = CommandLine.arguments.contains("--quick")
let rounds = quick ? 1 : 3
let latencySamples = quick ? 300 : 2000
let warmUp = quick ? 50 : 200
let latencyTurn = 100
let throughputMessages = quick ? 3000 : 20_000
/// What every message carries besides its send time, alike for raw and relay.
let padding = String(repeating: "x", count: 64)

func log(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}

func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

#if DEBUG
log("*** debug build: numbers are not representative; run with -c release ***")
#endif

/// Where to connect and log, for every contender.
struct Setup: Sendable {
    let connection: PostgresConnection.Configuration
    let logger: Logger
    let padding: String
}

var quietLogger = Logger(label: "RelayBenchmarks")
quietLogger.logLevel = .error
var environment = ProcessInfo.processInfo.environment
environment["PGSSLMODE"] = environment["PGSSLMODE"] ?? "disable"
let setup = Setup(connection: try RelayConfiguration.environment(environment), logger: quietLogger, padding: padding)

/// What is being measured, and every receipt so far (any contender): what
/// the watchdog reads.
let phase = LockedState("starting")
let progress = Atomic<Int>(0)

/// Ends the run, with what is known, when no receipt has come for `stall`:
/// a message that will never arrive (shed by a full backlog, say) must not
/// leave the benchmark waiting for it forever. `diagnosis` describes the
/// contenders (their relays' statistics).
func startWatchdog(stall: Duration, diagnosis: @escaping @Sendable () -> String) -> Task<Void, Never> {
    Task.detached {
        var last = progress.load(ordering: .relaxed)
        var quiet = Duration.zero
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let now = progress.load(ordering: .relaxed)
            quiet = now == last ? quiet + .seconds(1) : .zero
            last = now
            if quiet >= stall {
                log("no message received for \(stall) while measuring \(phase.withLock { $0 }); stopping")
                log(diagnosis())
                exit(2)
            }
        }
    }
}

/// `configuration` with a receive backlog that holds a whole throughput
/// burst from one sender. At the defaults (4 MiB per sender) a receiver that
/// falls behind sheds part of a burst of 20,000 signed messages: the relay
/// bounds its memory under a flood, by design, while PostgresNIO's raw
/// listener buffers without a bound. This benchmark measures delivery, so
/// every contender gets every message.
func holdingABurst(_ configuration: RelayConfiguration) -> RelayConfiguration {
    var configuration = configuration
    configuration.receiveBacklogBytes = 64 << 20
    configuration.receiveBacklogBytesPerSender = 64 << 20
    return configuration
}

/// Receipts from a receiving side: what was received (a sequence number) and when.
final class Receipts: Sendable {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let state = LockedState<(histogram: Histogram<UInt64>, count: Int, last: UInt64)>(
        (Histogram(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three), 0, 0))

    init() {
        (stream, continuation) = AsyncStream<Void>.makeStream()
    }

    /// Records one receipt of a message sent at `sentAt` (nanoseconds).
    func received(sentAt: UInt64) {
        let now = nanoseconds()
        state.withLock { state in
            _ = state.histogram.record(now &- sentAt)
            state.count += 1
            state.last = now
        }
        progress.add(1, ordering: .relaxed)
        continuation.yield()
    }

    func reset() {
        state.withLock { state in
            state.histogram.reset()
            state.count = 0
        }
    }

    var histogram: Histogram<UInt64> { state.withLock { $0.histogram } }
    var count: Int { state.withLock { $0.count } }
    var lastReceipt: UInt64 { state.withLock { $0.last } }
}

/// One way of sending: raw or relay.
protocol Contender: Sendable {
    var name: String { get }
    var receipts: Receipts { get }
    func send(sentAt: UInt64) async throws
    func sendBurst(_ count: Int) async throws
    /// Returns once every statement sent so far has completed. Raw sending
    /// waits for its statements; the relay returns from a post at once and
    /// sends one statement at a time, so a closed loop waits here too: else
    /// each relay message would wait behind the previous one's statement,
    /// which raw's loop never counts.
    func settle() async
}

extension Contender {
    func settle() async {}
}

// MARK: Raw PostgresNIO

final class Raw: Contender {
    let name: String
    let receipts = Receipts()
    let sender: PostgresConnection
    let channel: String
    /// Messages per statement in a burst (1: the plain `pg_notify` of `send`).
    let batchSize: Atomic<Int>
    let setup: Setup
    private let listening: [Task<Void, any Error>]

    /// - Parameter senderListens: The sending connection listens on the
    ///   channel too, as each relay instance's single connection does (the
    ///   server then delivers every message to both connections).
    init(name: String, channel: String, batchSize: Int, senderListens: Bool = false, setup: Setup) async throws {
        self.setup = setup
        self.name = name
        self.channel = channel
        self.batchSize = Atomic(batchSize)
        sender = try await PostgresConnection.connect(configuration: setup.connection, id: 1, logger: setup.logger)
        let listener = try await PostgresConnection.connect(
            configuration: setup.connection, id: 2, logger: setup.logger)
        let receipts = receipts
        let (ready, isReady) = AsyncStream<Void>.makeStream()
        var listening = [
            Task {
                try await listener.listen(on: channel) { notifications in
                    isReady.yield()
                    for try await notification in notifications {
                        // "<sent-at nanoseconds>;<padding>"
                        let sentAt = notification.payload.split(separator: ";", maxSplits: 1).first.flatMap { UInt64($0) }
                        receipts.received(sentAt: sentAt ?? 0)
                    }
                }
            }
        ]
        if senderListens {
            let sender = sender
            listening.append(
                Task {
                    try await sender.listen(on: channel) { notifications in
                        isReady.yield()
                        for try await _ in notifications {}
                    }
                })
        }
        self.listening = listening
        var readiness = ready.makeAsyncIterator()
        for _ in listening { _ = await readiness.next() }
    }

    private func payload(_ sentAt: UInt64) -> String { "\(sentAt);\(setup.padding)" }

    func send(sentAt: UInt64) async throws {
        let rows = try await sender.query("SELECT pg_notify(\(channel), \(payload(sentAt)))", logger: setup.logger)
        for try await _ in rows {}
    }

    func sendBurst(_ count: Int) async throws {
        let batchSize = batchSize.load(ordering: .relaxed)
        if batchSize == 1 {
            for _ in 0..<count { try await send(sentAt: nanoseconds()) }
            return
        }
        var remaining = count
        while remaining > 0 {
            let batch = (0..<min(batchSize, remaining)).map { _ in payload(nanoseconds()) }
            let rows = try await sender.query(
                "SELECT pg_notify(\(channel), m) FROM unnest(\(batch)::text[]) WITH ORDINALITY AS b(m, i) ORDER BY i",
                logger: setup.logger)
            for try await _ in rows {}
            remaining -= batch.count
        }
    }
}

// MARK: Relay

extension NotificationHub.Name {
    static let benchEvent: Self = "relay.bench.event"
}

final class RelayContender: Contender {
    let name: String
    let receipts = Receipts()
    /// The sender's statements and the messages in them.
    let statements = StatementCounts()
    /// Where the relay's time goes in the server loop: each post call on the
    /// sender, each own message skipped on the sender, each message received
    /// (read, checks, hub post, this benchmark's observer) on the receiver.
    let posting = Receipts()
    let skippingOwn = Receipts()
    let receiving = Receipts()
    /// Messages posted since the start.
    let posted = Atomic<Int>(0)
    let sender: Relay
    let receiver: Relay
    let padding: String
    private let tasks: [Task<Void, Never>]

    /// - Parameter signing: Signed messages (nil: unsigned, the default).
    init(name: String = "relay", channel: String, signing: RelaySigning? = nil, setup: Setup) async throws {
        self.name = name
        let channel = try RelayChannel(channel)
        padding = setup.padding
        var senderConfiguration = RelayConfiguration(
            transport: CountingTransport(
                base: PostgresTransport(configuration: setup.connection), counts: statements,
                receiving: skippingOwn),
            channel: channel, logger: setup.logger)
        senderConfiguration.signing = signing
        sender = try Relay(configuration: holdingABurst(senderConfiguration))
        var receiverConfiguration = RelayConfiguration(
            transport: CountingTransport(
                base: PostgresTransport(configuration: setup.connection), counts: StatementCounts(),
                receiving: receiving),
            channel: channel, logger: setup.logger)
        receiverConfiguration.signing = signing
        receiver = try Relay(configuration: holdingABurst(receiverConfiguration))
        try sender.bridge(.benchEvent, userInfoTypes: ["t": Int.self, "pad": String.self])
        try receiver.bridge(.benchEvent, userInfoTypes: ["t": Int.self, "pad": String.self])
        tasks = [sender, receiver].map { relay in Task { await relay.run() } }
        let receipts = receipts
        try NotificationHub.default.addObserver(receipts, name: .benchEvent, object: receiver) { receipts, note in
            receipts.received(sentAt: UInt64(note.userInfo["t"] as? Int ?? 0))
        }
        try await sender.waitUntilListening()
        try await receiver.waitUntilListening()
    }

    func send(sentAt: UInt64) async throws {
        try sender.post(name: .benchEvent, userInfo: ["t": Int(sentAt), "pad": padding])
        posting.received(sentAt: sentAt)
        posted.add(1, ordering: .relaxed)
    }

    func sendBurst(_ count: Int) async throws {
        for _ in 0..<count {
            try sender.post(name: .benchEvent, userInfo: ["t": Int(nanoseconds()), "pad": padding])
        }
        posted.add(count, ordering: .relaxed)
    }

    func settle() async {
        await statements.waitUntilCompleted(posted.load(ordering: .relaxed))
    }
}

// MARK: Measurements

/// Closed loop: send one, wait for its receipt, `count` times.
func latency(_ contender: some Contender, count: Int) async throws -> Histogram<UInt64> {
    phase.withLock { $0 = "latency, \(contender.name)" }
    contender.receipts.reset()
    var iterator = contender.receipts.stream.makeAsyncIterator()
    for _ in 0..<count {
        try await contender.send(sentAt: nanoseconds())
        _ = await iterator.next()
        await contender.settle()
    }
    return contender.receipts.histogram
}

/// Open loop: `count` messages as fast as the sender goes; messages per second until the last arrives.
func throughput(_ contender: some Contender, count: Int) async throws -> Double {
    phase.withLock { $0 = "throughput, \(contender.name), \(count) messages" }
    contender.receipts.reset()
    var iterator = contender.receipts.stream.makeAsyncIterator()
    let start = nanoseconds()
    try await contender.sendBurst(count)
    for _ in 0..<count { _ = await iterator.next() }
    await contender.settle()
    let seconds = Double(contender.receipts.lastReceipt - start) / 1e9
    return Double(count) / seconds
}

func microseconds(_ nanoseconds: UInt64) -> String { String(format: "%8.1f", Double(nanoseconds) / 1000) }

let suffix = UUID().uuidString.prefix(8).lowercased()
let raw = try await Raw(name: "raw, one statement per message", channel: "bench_raw_\(suffix)", batchSize: 1, setup: setup)
let rawBatched = try await Raw(name: "raw, 256 per statement", channel: "bench_rawb_\(suffix)", batchSize: 256, setup: setup)
let rawAsRelay = try await Raw(
    name: "raw, the relay's mean batch per statement", channel: "bench_rawr_\(suffix)", batchSize: 1, setup: setup)
let rawAsRelayListening = try await Raw(
    name: "raw, the relay's mean batch, sender also listening", channel: "bench_rawrl_\(suffix)", batchSize: 1,
    senderListens: true, setup: setup)
let rawListening = try await Raw(
    name: "raw, sender also listening", channel: "bench_rawl_\(suffix)", batchSize: 1, senderListens: true,
    setup: setup)
let relay = try await RelayContender(channel: "bench_relay_\(suffix)", setup: setup)
let benchSigning = RelaySigning(current: try RelaySigningKey(id: "bench", secret: [UInt8](repeating: 5, count: 32)))
let signedRelay = try await RelayContender(
    name: "relay, signed (HMAC-SHA256)", channel: "bench_signed_\(suffix)", signing: benchSigning, setup: setup)
let loopback = try await LoopbackContender(setup: setup)
let rawWithRelayWork = try await RawWithRelayWork(suffix: suffix, setup: setup)
let publishProbe = try await PublishProbe(suffix: suffix, setup: setup)
let property = try await PropertyContender(
    name: "relay, property assignments, no state table", channel: "bench_prop_\(suffix)", stateTable: nil, setup: setup)
let propertyState = try await PropertyContender(
    name: "relay, property assignments, state table", channel: "bench_props_\(suffix)", stateTable: .default,
    setup: setup)

let watchdog = startWatchdog(stall: .seconds(60)) {
    let contenders: [any Contender] = [raw, rawBatched, rawAsRelay, rawAsRelayListening, rawListening, relay, signedRelay, loopback, rawWithRelayWork, property, propertyState]
    let receipts = contenders.map { "\($0.name): \($0.receipts.count) received" }
    let relays: [(String, Relay)] = [
        ("relay sender", relay.sender), ("relay receiver", relay.receiver),
        ("signed sender", signedRelay.sender), ("signed receiver", signedRelay.receiver),
        ("loopback sender", loopback.sender), ("loopback receiver", loopback.receiver),
        ("property sender", property.sender), ("property receiver", property.receiver),
        ("state-table sender", propertyState.sender), ("state-table receiver", propertyState.receiver),
    ]
    return (receipts + relays.map { "\($0.0): queued \($0.1.queuedMessages), \($0.1.statistics)" }).joined(separator: "\n")
}

log("warming up")
_ = try await latency(raw, count: warmUp)
_ = try await latency(rawListening, count: warmUp)
_ = try await latency(relay, count: warmUp)
_ = try await latency(signedRelay, count: warmUp)
_ = try await latency(loopback, count: warmUp)
_ = try await latency(rawWithRelayWork, count: warmUp)
_ = try await latency(property, count: warmUp)
_ = try await latency(propertyState, count: warmUp)
_ = try await publishProbe.roundTrips(count: warmUp)

var rawLatency = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
var rawListeningLatency = rawLatency
var relayLatency = rawLatency
var signedRelayLatency = rawLatency
var signingCosts: [SigningCosts] = []
var loopbackLatency = rawLatency
var loopbackPublished = rawLatency
var rawWithRelayWorkLatency = rawLatency
var rawWithRelayWorkEncoding = rawLatency
var rawWithRelayWorkReceiving = rawLatency
var propertyLatency = rawLatency
var propertyStateLatency = rawLatency
var relayPosting = rawLatency
var relaySkippingOwn = rawLatency
var relayReceiving = rawLatency
var statementRaw = rawLatency
var statementTransport = rawLatency
var inProcess: [InProcessCosts] = []
var rates: [String: [Double]] = [:]
var relayBatches: [Double] = []
for round in 1...rounds {
    log("round \(round) of \(rounds)")
    // Latency in turns of `latencyTurn` messages each, so that load from
    // elsewhere on a shared machine falls on every contender alike.
    for _ in 0..<latencySamples / latencyTurn {
        rawLatency.add(try await latency(raw, count: latencyTurn))
        rawListeningLatency.add(try await latency(rawListening, count: latencyTurn))
        for steps in [relay.posting, relay.skippingOwn, relay.receiving] { steps.reset() }
        relayLatency.add(try await latency(relay, count: latencyTurn))
        signedRelayLatency.add(try await latency(signedRelay, count: latencyTurn))
        for steps in [rawWithRelayWork.encodingTimes, rawWithRelayWork.receivingTimes] { steps.reset() }
        rawWithRelayWorkLatency.add(try await latency(rawWithRelayWork, count: latencyTurn))
        rawWithRelayWorkEncoding.add(rawWithRelayWork.encodingTimes.histogram)
        rawWithRelayWorkReceiving.add(rawWithRelayWork.receivingTimes.histogram)
        relayPosting.add(relay.posting.histogram)
        relaySkippingOwn.add(relay.skippingOwn.histogram)
        relayReceiving.add(relay.receiving.histogram)
        loopback.broker.published.reset()
        loopbackLatency.add(try await latency(loopback, count: latencyTurn))
        propertyLatency.add(try await latency(property, count: latencyTurn))
        propertyStateLatency.add(try await latency(propertyState, count: latencyTurn))
        loopbackPublished.add(loopback.broker.published.histogram)
    }
    rates[raw.name, default: []].append(try await throughput(raw, count: throughputMessages))
    rates[rawBatched.name, default: []].append(try await throughput(rawBatched, count: throughputMessages))
    relay.statements.reset()
    rates[relay.name, default: []].append(try await throughput(relay, count: throughputMessages))
    relayBatches.append(relay.statements.meanBatch)
    signedRelay.statements.reset()
    rates[signedRelay.name, default: []].append(try await throughput(signedRelay, count: throughputMessages))
    rawAsRelay.batchSize.store(max(1, Int((relayBatches.last!).rounded())), ordering: .relaxed)
    rates[rawAsRelay.name, default: []].append(try await throughput(rawAsRelay, count: throughputMessages))
    rawAsRelayListening.batchSize.store(rawAsRelay.batchSize.load(ordering: .relaxed), ordering: .relaxed)
    rates[rawAsRelayListening.name, default: []].append(
        try await throughput(rawAsRelayListening, count: throughputMessages))
    rates[loopback.name, default: []].append(try await throughput(loopback, count: throughputMessages))
    rates[property.name, default: []].append(try await throughput(property, count: throughputMessages))
    rates[propertyState.name, default: []].append(try await throughput(propertyState, count: throughputMessages))
    phase.withLock { $0 = "statements waited for, raw and PostgresTransport; in process" }
    let statements = try await publishProbe.roundTrips(count: latencySamples)
    statementRaw.add(statements.raw)
    statementTransport.add(statements.transport)
    inProcess.append(try measureInProcess(setup: setup, quick: quick))
    signingCosts.append(measureSigning(benchSigning, quick: quick))
}

watchdog.cancel()

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

print("relay vs raw PostgresNIO LISTEN/NOTIFY: two connections on loopback, \(rounds) round(s)")
print("latency, closed loop, \(latencySamples * rounds) messages each (µs)")
print("                                    p50       p90       p99       max")
for (name, histogram) in [
    ("raw", rawLatency), ("raw, sender also listening", rawListeningLatency), ("relay", relayLatency),
    ("relay, signed", signedRelayLatency),
] {
    print(
        name.padding(toLength: 32, withPad: " ", startingAt: 0),
        microseconds(histogram.valueAtPercentile(50)), " ", microseconds(histogram.valueAtPercentile(90)), " ",
        microseconds(histogram.valueAtPercentile(99)), " ", microseconds(histogram.max))
}
func ratio(_ percentile: Double, _ baseline: Histogram<UInt64>, _ relay: Histogram<UInt64>) -> Double {
    Double(relay.valueAtPercentile(percentile)) / Double(baseline.valueAtPercentile(percentile))
}
print(
    String(
        format: "relay / raw                          %.2fx                %.2fx", ratio(50, rawLatency, relayLatency),
        ratio(99, rawLatency, relayLatency)))
print(
    String(
        format: "relay / raw, sender also listening   %.2fx                %.2fx", ratio(50, rawListeningLatency, relayLatency),
        ratio(99, rawListeningLatency, relayLatency)))
print(
    String(
        format: "relay, signed / relay                %.2fx                %.2fx", ratio(50, relayLatency, signedRelayLatency),
        ratio(99, relayLatency, signedRelayLatency)))
print("throughput, \(throughputMessages) messages per burst, median of rounds (messages/s)")
for name in [raw.name, rawBatched.name, rawAsRelay.name, rawAsRelayListening.name, relay.name, signedRelay.name] {
    print(name.padding(toLength: 56, withPad: " ", startingAt: 0), String(format: "%10.0f", median(rates[name]!)))
}
print(String(format: "relay's mean batch in a burst: %.1f messages per statement (median of rounds)", median(relayBatches)))
for name in [raw.name, rawBatched.name, rawAsRelay.name, rawAsRelayListening.name] {
    print(
        ("relay / " + name).padding(toLength: 64, withPad: " ", startingAt: 0),
        String(format: "%6.2fx", median(rates[relay.name]!) / median(rates[name]!)))
}
print(
    ("relay, signed / relay").padding(toLength: 64, withPad: " ", startingAt: 0),
    String(format: "%6.2fx", median(rates[signedRelay.name]!) / median(rates[relay.name]!)))
print("replicated property assignments, state table against none (round the \(PropertyContender.properties) properties in bursts)")
print("latency, closed loop, one assignment per statement (µs)   p50       p90       p99")
for (name, histogram) in [("no state table", propertyLatency), ("state table (upsert with the NOTIFY)", propertyStateLatency)] {
    print(
        ("  " + name).padding(toLength: 54, withPad: " ", startingAt: 0),
        microseconds(histogram.valueAtPercentile(50)), " ", microseconds(histogram.valueAtPercentile(90)), " ",
        microseconds(histogram.valueAtPercentile(99)))
}
print(
    String(
        format: "  state-table write per assignment (p50 difference)       %8.1f µs (%.2fx)",
        (Double(propertyStateLatency.valueAtPercentile(50)) - Double(propertyLatency.valueAtPercentile(50))) / 1000,
        ratio(50, propertyLatency, propertyStateLatency)))
print("throughput, \(throughputMessages) assignments per burst, median of rounds (assignments/s)")
for name in [property.name, propertyState.name] {
    print(("  " + name).padding(toLength: 56, withPad: " ", startingAt: 0), String(format: "%10.0f", median(rates[name]!)))
}
print(
    ("  state table / none, throughput").padding(toLength: 64, withPad: " ", startingAt: 0),
    String(format: "%6.2fx", median(rates[propertyState.name]!) / median(rates[property.name]!)))
print("signing, in process (µs per message, median of rounds)")
for (label, cost) in [
    ("  sign a \(signingCosts[0].smallBytes)-byte message (HMAC-SHA256, hex)", \SigningCosts.signSmall),
    ("  verify it", \SigningCosts.verifySmall),
    ("  sign a \(signingCosts[0].largeBytes)-byte message", \SigningCosts.signLarge),
    ("  verify it", \SigningCosts.verifyLarge),
] {
    print(label.padding(toLength: 66, withPad: " ", startingAt: 0), String(format: "%8.2f", median(signingCosts.map { $0[keyPath: cost] }) / 1000))
}
func p50(_ histogram: Histogram<UInt64>) -> Double { Double(histogram.valueAtPercentile(50)) }
func row(_ label: String, _ nanoseconds: Double) {
    print(label.padding(toLength: 66, withPad: " ", startingAt: 0), String(format: "%8.2f", nanoseconds / 1000))
}
let inProcessMedians = { (cost: KeyPath<InProcessCosts, Double>) in median(inProcess.map { $0[keyPath: cost] }) }
print("where the time goes (µs per message; in process: median of rounds; otherwise p50)")
print("in process, no server")
row("  encode a post (JSON, numbered)", inProcessMedians(\.encode))
row("  decode a message", inProcessMedians(\.decode))
row("  receive path: decode, checks, hub post", inProcessMedians(\.receive))
row("  hub post alone, one observer", inProcessMedians(\.hubPost))
row("  skip an own message (self-delivery, receiving side)", inProcessMedians(\.ownSkip))
print("two relays over an in-memory broker, closed loop, \(latencySamples * rounds) messages")
row("  post -> transport publish (encode, queue, hop)", p50(loopbackPublished))
row("  post -> other relay's observer (all of the relay)", p50(loopbackLatency))
print("two relays over the server, in the latency loop above, each step where it runs")
row("  post on the sender (encode, queue, statement to PostgresNIO)", p50(relayPosting))
row("  own message skipped on the sender", p50(relaySkippingOwn))
row("  receive on the receiver (read, checks, hub post, observer)", p50(relayReceiving))
print("the relay's work over raw PostgresNIO, latency p50 (turns alongside the table above)")
row("  raw, sender also listening", p50(rawListeningLatency))
row("  the same, carrying relay messages into a relay's receive path", p50(rawWithRelayWorkLatency))
row("    of which: encoding on the sender, where it runs", p50(rawWithRelayWorkEncoding))
row("    of which: the receive path on the receiver, where it runs", p50(rawWithRelayWorkReceiving))
row("  relay (adds its queue, statements, PostgresTransport)", p50(relayLatency))
print("server, one pg_notify statement waited for, \(latencySamples * rounds) each")
row("  raw query", p50(statementRaw))
row("  PostgresTransport publish", p50(statementTransport))
row("  publishing machinery (difference)", p50(statementTransport) - p50(statementRaw))
print("self-delivery at the server")
row("  raw p50 with the sender listening, less without", p50(rawListeningLatency) - p50(rawLatency))
print(
    "throughput over the in-memory broker (the relay's own ceiling): "
        + String(format: "%.0f messages/s", median(rates[loopback.name]!)))

/// What signing costs one message, sender and receiver side (nanoseconds per message).
struct SigningCosts {
    var smallBytes = 0
    var largeBytes = 0
    var signSmall = 0.0
    var verifySmall = 0.0
    var signLarge = 0.0
    var verifyLarge = 0.0
}

func measureSigning(_ signing: RelaySigning, quick: Bool) -> SigningCosts {
    let iterations = quick ? 2_000 : 20_000
    let small = #"{"o":"9F0C1B8E-3D2A-4C51-8F7E-1A2B3C4D5E6F","i":12345,"s":17,"w":1732480000000,"v":1,"t":"post","n":"relay.bench.event","u":{"t":1,"pad":"\#(padding)"}}"#
    let large = small.replacingOccurrences(of: padding, with: String(repeating: "x", count: 7800))
    var costs = SigningCosts(smallBytes: small.utf8.count, largeBytes: large.utf8.count)
    func time(_ body: () -> Void) -> Double {
        let start = nanoseconds()
        for _ in 0..<iterations { body() }
        return Double(nanoseconds() - start) / Double(iterations)
    }
    var sink = 0
    let channel = try! RelayChannel("relay_bench")
    let signedSmall = signing.sign(small, channel: channel)
    let signedLarge = signing.sign(large, channel: channel)
    costs.signSmall = time { sink &+= signing.sign(small, channel: channel).utf8.count }
    costs.verifySmall = time { if case .valid = signing.verify(signedSmall, channel: channel) { sink &+= 1 } }
    costs.signLarge = time { sink &+= signing.sign(large, channel: channel).utf8.count }
    costs.verifyLarge = time { if case .valid = signing.verify(signedLarge, channel: channel) { sink &+= 1 } }
    if sink == 42 { log("") }  // keeps the work observable
    return costs
}
#endif

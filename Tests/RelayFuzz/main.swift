#if Relay
// make relay-fuzz: hostile input through a relay's receive path, from a
// seeded generator (the same seed replays the same run). Random bytes,
// mutated messages and sequences of messages from a few instance ids, with
// values at the edges (sequence numbers and stamps near UInt64.max, jumps,
// ids with control characters, deep nesting, near-limit sizes), into an
// unsigned and a signed relay. Incarnations play games (restarts, restarts on
// a clock behind, forged older and newer ones), send times lie in the past
// and the future, and earlier inputs are replayed verbatim at any distance.
// Checks that nothing traps, that every message is accounted for exactly
// once (delivered, dropped or skipped as own), and that the signed relay
// never delivers a copy of a message it delivered before.
//
// Usage: RelayFuzz [--seconds N] [--seed S]
import Foundation
import Logging
import SwiftKVO
import SwiftKVORelay

/// SplitMix64: small, fast, and the same sequence for the same seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A transport that never connects: only the receive path is exercised.
struct NoTransport: RelayTransport {
    var maximumPayloadBytes: Int { 7999 }
    func run(
        channel: RelayChannel, logger: Logger, connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws {
        try await Task.sleep(for: .seconds(1_000_000))
    }
}

final class Flags: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["on": \Flags.on, "banner": \Flags.banner] }
    @Observed var on = false
    @Observed var banner = ""
}

/// Properties under every merge policy but the whole value's.
final class Ledger: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["counts": \Ledger.counts, "labels": \Ledger.labels, "tags": \Ledger.tags, "visits": \Ledger.visits] }
    @Observed var counts: [String: Int] = [:]
    @Observed var labels: [String: String] = [:]
    @Observed var tags: Set<String> = []
    @Observed var visits: UInt8 = 0
}

var seconds = 10.0
var seed = UInt64(Date().timeIntervalSince1970)
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
    case "--seed": seed = UInt64(arguments.next() ?? "") ?? seed
    default:
        FileHandle.standardError.write(Data("usage: RelayFuzz [--seconds N] [--seed S]\n".utf8))
        exit(2)
    }
}

var random = SeededGenerator(state: seed)
var quiet = Logger(label: "RelayFuzz")
quiet.logLevel = .critical
let key = try RelaySigningKey(id: "fuzz", secret: [UInt8](repeating: 3, count: 32))

@MainActor func makeRelay(signed: Bool) throws -> Relay {
    var configuration = RelayConfiguration(transport: NoTransport(), instanceID: "fuzz-self", logger: quiet)
    configuration.maximumTrackedInstances = 16  // small, so eviction and refusal happen
    configuration.instanceIdleTimeout = .zero
    if signed { configuration.signing = RelaySigning(current: key) }
    return try Relay(configuration: configuration)
}

let flags = Flags()
let relays = [try makeRelay(signed: false), try makeRelay(signed: true)]
for relay in relays {
    try relay.bridge("fuzz.typed", userInfoTypes: ["n": Int.self, "text": String.self])
    try relay.bridge("fuzz.untyped")
}
try relays[0].replicate(\.on, of: flags, as: "fuzz.on")
try relays[1].replicate(\.banner, of: flags, as: "fuzz.banner")
let ledger = Ledger()
for relay in relays {
    try relay.replicate(\.counts, of: ledger, as: "fuzz.counts", merging: .counterPerKey())
    try relay.replicate(\.labels, of: ledger, as: "fuzz.labels", merging: .perKey())
    try relay.replicate(\.tags, of: ledger, as: "fuzz.tags", merging: .perMember())
    try relay.replicate(\.visits, of: ledger, as: "fuzz.visits", merging: .counter)
}
let signer = RelaySigning(current: key)
let channel = RelayConfiguration(transport: NoTransport(), instanceID: "fuzz-self", logger: quiet).channel
let wrongSigner = RelaySigning(current: try RelaySigningKey(id: "fuzz", secret: [UInt8](repeating: 4, count: 32)))

// MARK: Generating

extension SeededGenerator {
    mutating func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0..<choices.count, using: &self)] }
    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }
}

@MainActor func edgeNumber() -> UInt64 {
    random.pick([
        0, 1, 2, 3, 65_535, 65_536, 65_537, 1 << 32, UInt64(Int.max), UInt64(Int.max) + 1, .max - 1, .max,
        UInt64.random(in: 0...1000, using: &random), UInt64.random(in: 0...UInt64.max, using: &random),
        UInt64(Date().timeIntervalSince1970 * 1_000_000),
    ])
}

@MainActor func number() -> String {
    random.pick([
        String(edgeNumber()), "-1", "1.5", "1e3", "18446744073709551616", "-9223372036854775809", "null", "\"7\"", "true",
    ])
}

@MainActor func text() -> String {
    let scalars: [Unicode.Scalar] = ["a", "z", "0", "\"", "\\", "\n", "\u{0}", "\u{1b}", "\u{202e}", "é", "漢", "🎉", "/", " "]
    var result = ""
    for _ in 0..<Int.random(in: 0...12, using: &random) { result.unicodeScalars.append(random.pick(scalars)) }
    return result
}

@MainActor func quoted(_ string: String) -> String {
    // Sometimes raw (possibly invalid JSON), mostly escaped as JSONEncoder would.
    if random.chance(20) { return "\"" + string + "\"" }
    let data = try! JSONEncoder().encode(string)
    return String(decoding: data, as: UTF8.self)
}

@MainActor func value(depth: Int) -> String {
    switch Int.random(in: 0..<7, using: &random) {
    case 0: return number()
    case 1: return quoted(text())
    case 2 where depth > 0: return "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth: depth - 1) }.joined(separator: ",") + "]"
    case 3 where depth > 0: return "{" + (0..<Int.random(in: 0...3, using: &random)).map { _ in quoted(text()) + ":" + value(depth: depth - 1) }.joined(separator: ",") + "}"
    case 4: return String(repeating: "[", count: 30 + Int.random(in: 0...4, using: &random)) + "1" + String(repeating: "]", count: 30 + Int.random(in: 0...4, using: &random))
    case 5: return quoted(String(repeating: "x", count: Int.random(in: 0...7990, using: &random)))
    default: return random.pick(["true", "false", "null", "{}", "[]"])
    }
}

let ids = ["alpha", "beta", "gamma", "fuzz-self", "", "a\u{1b}[31m", "line\nbreak", String(repeating: "i", count: 129)]
let names = [
    "fuzz.typed", "fuzz.untyped", "fuzz.on", "fuzz.banner", "fuzz.counts", "fuzz.labels", "fuzz.tags", "fuzz.visits",
    "nobody", "",
]

/// An entry key: a writer, a dictionary key, a writer and a key, or garbage.
@MainActor func entry() -> String {
    let id = random.pick(ids)
    switch Int.random(in: 0..<5, using: &random) {
    case 0: return quoted(id)
    case 1: return quoted(quoted(text()))
    case 2: return quoted("[" + quoted(id) + "," + quoted(text()) + "]")
    case 3: return quoted(text())
    default: return number()
    }
}
var sequences: [String: UInt64] = [:]
/// Each id's current incarnation, made as a relay makes one (start time << 22, random bits).
var incarnations: [String: UInt64] = [:]

@MainActor func incarnation(startedAt milliseconds: UInt64) -> UInt64 {
    milliseconds << 22 | UInt64.random(in: 0..<(1 << 22), using: &random)
}

var nowMilliseconds: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

/// `id`'s incarnation for its next message: mostly its current one; at times a
/// restart (on a clock on time or 20 s behind, which becomes current), or a
/// forged one 70 s older or 29 s newer (used once).
@MainActor func incarnation(for id: String) -> UInt64 {
    let current = incarnations[id] ?? incarnation(startedAt: nowMilliseconds)
    incarnations[id] = current
    switch Int.random(in: 0..<100, using: &random) {
    case 0, 1:
        incarnations[id] = incarnation(startedAt: nowMilliseconds + UInt64.random(in: 0...100, using: &random))
        sequences[id] = 1
    case 2:
        incarnations[id] = incarnation(startedAt: nowMilliseconds - 20_000)
        sequences[id] = 1
    case 3: return incarnation(startedAt: nowMilliseconds - 70_000)
    case 4: return incarnation(startedAt: nowMilliseconds + 29_000)
    default: break
    }
    return incarnations[id]!
}

@MainActor func message() -> String {
    let id = random.chance(80) ? random.pick(Array(ids.prefix(3))) : random.pick(ids)
    var sequence = sequences[id, default: 0] &+ 1
    if random.chance(15) { sequence = edgeNumber() }
    if random.chance(5) { sequence = sequences[id, default: 0] }  // a duplicate
    sequences[id] = sequence
    var members: [String] = [
        #""o":"# + quoted(id), #""s":"# + (random.chance(95) ? String(sequence) : number()),
        #""v":"# + (random.chance(95) ? "1" : number()),
    ]
    if random.chance(70) {
        members.append(#""i":"# + (random.chance(90) ? String(incarnation(for: id)) : number()))
    }
    if random.chance(50) {
        let now = nowMilliseconds
        let sent = random.pick([now, now, now, now, now - 65_000, now - 20_000, now + 29_000])
        members.append(#""w":"# + (random.chance(80) ? String(sent) : number()))
    }
    let name = random.pick(names)
    if random.chance(50) {
        members += [#""t":"post""#, #""n":"# + quoted(name)]
        let userInfo: String
        switch Int.random(in: 0..<3, using: &random) {
        case 0: userInfo = #"{"n":"# + number() + #","text":"# + quoted(text()) + "}"
        case 1: userInfo = "{" + quoted(text()) + ":" + value(depth: 3) + "}"
        default: userInfo = value(depth: 3)
        }
        members.append(#""u":"# + userInfo)
    } else {
        members += [#""t":"# + random.pick([#""set""#, #""nope""#, "1"]), #""n":"# + quoted(name)]
        members.append(#""c":"# + (random.chance(80) ? String(edgeNumber()) : number()))
        if random.chance(60) { members.append(#""e":"# + entry()) }
        let sums = "[" + String(edgeNumber()) + "," + String(edgeNumber()) + "]"
        members.append(#""x":"# + (random.chance(30) ? sums : value(depth: 2)))
    }
    if random.chance(10) { members.shuffle(using: &random) }
    if random.chance(5) { members.append(random.pick(members)) }  // a repeated member
    var payload = "{" + members.joined(separator: ",") + "}"
    if random.chance(5), !payload.isEmpty {
        var bytes = Array(payload.utf8)
        bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        payload = String(decoding: bytes, as: UTF8.self)
    }
    return payload
}

@MainActor func bytes() -> String {
    let count = random.pick([0, 1, 2, 16, 200, 7999, 8000, 9000])
    return String(decoding: (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }, as: UTF8.self)
}

// MARK: Running

/// What the signed relay was fed, to replay: whether it was delivered, and when.
struct Fed {
    let payload: String
    let delivered: Bool
    let at: ContinuousClock.Instant
}
var history: [Fed] = []
/// The delivered ones among them (few are: most inputs are hostile), replayed as often.
var deliveredHistory: [Fed] = []
let historyCapacity = 100_000

@MainActor func remember(_ entry: Fed, in history: inout [Fed]) {
    if history.count < historyCapacity {
        history.append(entry)
    } else {
        history[Int.random(in: 0..<historyCapacity, using: &random)] = entry
    }
}
var replays = 0
var replaysDelivered = 0

/// Feeds `payload` to the signed relay; whether it was delivered.
@MainActor func feedSigned(_ payload: String) -> Bool {
    let before = relays[1].statistics.delivered
    _ = relays[1].receive(payload)
    return relays[1].statistics.delivered > before
}

let deadline = Date().addingTimeInterval(seconds)
var fed = [0, 0]
var iterations = 0
while Date() < deadline {
    for _ in 0..<100 {
        iterations += 1
        if random.chance(5), !history.isEmpty {
            // A verbatim copy of an earlier input, from any distance back. The
            // signed relay forgets no instance within 61 s (twice the skew and a
            // second), so within 60 s a copy of a delivered message is never new.
            let pool = deliveredHistory.isEmpty || random.chance(50) ? history : deliveredHistory
            let old = pool[Int.random(in: 0..<pool.count, using: &random)]
            replays += 1
            fed[1] += 1
            if feedSigned(old.payload), old.delivered, ContinuousClock.now - old.at < .seconds(60) {
                replaysDelivered += 1
                print("relay-fuzz: a copy of a delivered message was delivered again: \(old.payload.prefix(300))")
            }
            continue
        }
        var payload = random.chance(10) ? bytes() : message()
        for (index, relay) in relays.enumerated() {
            if index == 1, random.chance(70) {
                payload = (random.chance(10) ? wrongSigner : signer).sign(payload.isEmpty ? "{}" : payload, channel: channel)
            }
            if index == 1 {
                let entry = Fed(payload: payload, delivered: feedSigned(payload), at: .now)
                remember(entry, in: &history)
                if entry.delivered { remember(entry, in: &deliveredHistory) }
            } else {
                _ = relay.receive(payload)
            }
            fed[index] += 1
        }
        if random.chance(1) { flags.on.toggle() }  // local writes after whatever stamps arrived
        if random.chance(1) { flags.banner = text() }
        if random.chance(1) { ledger.counts[text(), default: 0] += Int.random(in: -3...3, using: &random) }
        if random.chance(1) { ledger.tags.insert(text()) }
        if random.chance(1) { ledger.visits &+= 1 }
    }
}
for relay in relays { relay.flushResynchronizations(now: .now + .seconds(3600)) }

var failed = false
for (index, relay) in relays.enumerated() {
    let statistics = relay.statistics
    let accounted = statistics.delivered + statistics.dropped + statistics.ownMessagesSkipped
    print("relay-fuzz: \(index == 0 ? "unsigned" : "signed  ") \(fed[index]) messages: \(statistics)")
    if accounted != fed[index] {
        print("relay-fuzz: invariant broken: \(accounted) accounted for, \(fed[index]) fed (seed \(seed))")
        failed = true
    }
}
print(
    "relay-fuzz: \(replays) verbatim replays to the signed relay (of \(deliveredHistory.count) delivered inputs"
        + " kept), \(replaysDelivered) delivered again")
if replaysDelivered > 0 { failed = true }
print("relay-fuzz: seed \(seed), \(iterations) inputs in \(seconds) s, \(failed ? "FAILED" : "ok")")
exit(failed ? 1 : 0)
#endif

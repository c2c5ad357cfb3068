#if Relay
// The other instance in SwiftKVORelayTests' two-process test: a relay on the
// channel given as first argument that answers every "peer.ping" with a
// "peer.pong" carrying the same "n", and posts a "peer.pong" with "counter"
// whenever the replicated property "peer.counter" changes (a remote value
// assigned here notifies local observers like any change). Prints "ready"
// once listening; exits when stdin closes.
import Foundation
import Logging
import SwiftKVO
import SwiftKVORelay

final class Counter: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Counter.value] }
    @Observed var value = 0
}

extension NotificationHub.Name {
    static let ping: Self = "peer.ping"
    static let pong: Self = "peer.pong"
}

final class Responder: Sendable {}

let channel = try RelayChannel(CommandLine.arguments.dropFirst().first ?? "relay_peer")
var logger = Logger(label: "RelayTestPeer")
logger.logLevel = .warning
let relay = try Relay(
    configuration: RelayConfiguration(postgres: try RelayConfiguration.environment(), channel: channel, logger: logger))
try relay.bridge(.ping, userInfoTypes: ["n": Int.self])
try relay.bridge(.pong, userInfoTypes: ["n": Int.self, "counter": Int.self])
let counter = Counter()
try relay.replicate(\.value, of: counter, as: "peer.counter")

let responder = Responder()
try NotificationHub.default.addObserver(responder, name: .ping) { _, note in
    guard note.relayOrigin != .local, let n = note.userInfo["n"] as? Int else { return }
    try? relay.post(name: .pong, userInfo: ["n": n])
}
let token = try counter.observe(\.value, options: .new) { _, change in
    try? relay.post(name: .pong, userInfo: ["counter": change.newValue ?? -1])
}

let running = Task { await relay.run() }
try await relay.waitUntilListening()
FileHandle.standardOutput.write(Data("ready\n".utf8))
// Reads stdin on a thread of its own: a blocking read must not hold one of
// the few threads the relay's tasks run on.
await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
    Thread.detachNewThread {
        while readLine() != nil {}
        done.resume()
    }
}
running.cancel()
await running.value
withExtendedLifetime((token, responder)) {}
#endif

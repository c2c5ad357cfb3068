#if Relay
// Instances of one service, sharing an order notification and a feature
// flag through PostgreSQL. Run it in two terminals (see the README), then type
// `order 7`, `checkout on` or `checkout off` in either; end with Ctrl-D, or
// Ctrl-C: either shuts the relay down gracefully (what is queued is sent first).
// An instance started later prints the flag's current value as it starts: the
// relay keeps it in the table swiftkvo_relay_state.
import Foundation
import Logging
import ServiceLifecycle
import SwiftKVO
import SwiftKVORelay

final class FeatureFlags: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["checkout": \FeatureFlags.checkout] }
    @Observed var checkout = false
}

extension NotificationHub.Name {
    static let orderPlaced: Self = "orders.placed"
}

final class OrderLog: Sendable {}

// Host, user, password and TLS come from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGSSLMODE.
var configuration = RelayConfiguration(postgres: try RelayConfiguration.environment())
configuration.shutdownTimeout = .seconds(3)   // how long a shutdown may spend sending the queue
let relay = try Relay(configuration: configuration)
try relay.bridge(.orderPlaced, userInfoTypes: ["id": Int.self])
let flags = FeatureFlags()
try relay.replicate(\.checkout, of: flags, as: "flags.checkout")

let orderLog = OrderLog()
try NotificationHub.default.addObserver(orderLog, name: .orderPlaced) { _, note in
    let from = note.relayOrigin == .local ? "here" : "another instance"
    print("order \(note.userInfo["id"] ?? "?") placed \(from)")
}
try NotificationHub.default.addObserver(orderLog, name: Relay.resynchronize) { _, note in
    let updated = (note.userInfo["updated"] as? [String]) ?? []
    print("resynchronize (\(note.userInfo["reason"] ?? "?")); brought up to date: \(updated)")
}
let token = try flags.observe(\.checkout, options: .new) { _, change in
    print("checkout is \(change.newValue! ? "on" : "off")")
}

// The relay is a Service: it runs until SIGTERM or SIGINT (or the end of the input
// below), then sends what is queued and reports what it could not.
let group = ServiceGroup(
    services: [relay], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "RelayExample"))
let running = Task.detached { [group, relay] in
    try await group.run()
    print("stopped: \(relay.shutdownReport.map { "\($0.unsent) message(s) not sent" } ?? "no shutdown report")")
    exit(0)   // after a signal, also ends the wait for input
}
try await relay.waitUntilListening()   // connected, and the current values loaded
print("listening as \(relay.instanceID); checkout is \(flags.checkout ? "on" : "off")")

while let line = readLine() {
    let words = line.split(separator: " ")
    switch (words.first, words.dropFirst().first) {
    case ("order", let id?):
        if let id = Int(id) { try relay.post(name: .orderPlaced, userInfo: ["id": id]) }
    case ("checkout", "on"): flags.checkout = true
    case ("checkout", "off"): flags.checkout = false
    default: print("type `order <number>`, `checkout on` or `checkout off`")
    }
}
await group.triggerGracefulShutdown()
try await running.value
#endif

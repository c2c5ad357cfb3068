// Two instances of one service, sharing an order notification and a feature
// flag through PostgreSQL. Run it in two terminals (see the README), then type
// `order 7`, `checkout on` or `checkout off` in either; end with Ctrl-D.
import Foundation
import SwiftKVO
import SwiftKVORelay

final class FeatureFlags: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    @Observed var checkout = false
}

extension NotificationHub.Name {
    static let orderPlaced: Self = "orders.placed"
}

final class OrderLog: Sendable {}

// Host, user, password and TLS come from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGSSLMODE.
let relay = try Relay(configuration: RelayConfiguration(postgres: try RelayConfiguration.environment()))
try relay.bridge(.orderPlaced, userInfoTypes: ["id": Int.self])
let flags = FeatureFlags()
try relay.replicate(\.checkout, of: flags, as: "flags.checkout")

let orderLog = OrderLog()
try NotificationHub.default.addObserver(orderLog, name: .orderPlaced) { _, note in
    let from = note.relayOrigin == .local ? "here" : "another instance"
    print("order \(note.userInfo["id"] ?? "?") placed \(from)")
}
try NotificationHub.default.addObserver(orderLog, name: Relay.resynchronize) { _, note in
    print("resynchronize (\(note.userInfo["reason"] ?? "?")): reload shared state")
}
let token = try flags.observe(\.checkout, options: .new) { _, change in
    print("checkout is \(change.newValue! ? "on" : "off")")
}

let running = Task { await relay.run() }
try await relay.waitUntilListening()
print("listening as \(relay.instanceID)")

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
running.cancel()
await running.value
token.invalidate()

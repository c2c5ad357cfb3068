// An inventory shared by the instances of a Hummingbird 2 service through PostgreSQL
// (`make service-example` runs two of them). Each instance serves
//
//   GET    /items          the counts per SKU, the tags and the price, as JSON
//   POST   /items/:sku     adds ?by=N (default 1) to the SKU's count
//   POST   /tags/:tag      adds a tag;  DELETE /tags/:tag removes it
//   PUT    /price?value=   sets the price
//   GET    /ready          200 once the relay has loaded the current values, else 503
//   GET    /events         the changes as Server-Sent Events
//   GET    /metrics        the relay's and the engine's metrics (Prometheus text format)
//
// and configures itself from the environment: PORT (default 8080, on 127.0.0.1), INSTANCE_ID
// (default: a random id), RELAY_CHANNEL (default "inventory"), the PostgreSQL server from
// PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and PGSSLMODE, and, when set,
// SWIFTKVO_RELAY_SIGNING_KEY (`<key id>:<base64 secret>`) to sign what the relay sends.
// SIGTERM or SIGINT shuts it down gracefully: open event streams end, requests in flight
// finish, and the relay sends what is queued.
import AsyncAlgorithms
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SwiftKVOMacros
import SwiftKVOMetrics
import SwiftKVORelay

let environment = ProcessInfo.processInfo.environment
guard let port = Int(environment["PORT"] ?? "8080"), (1...65535).contains(port) else {
    FileHandle.standardError.write(Data("PORT must be a port number, 1 to 65535\n".utf8))
    exit(2)
}
var logger = Logger(label: "InventoryService")
logger.logLevel = environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
let metrics = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))

// README: begin
/// The state every instance shares. The macro makes `counts`, `tags` and `price` observable
/// (`@Observed`) and leaves `lock`, a `let`, as written. Every read and write holds `lock`,
/// hence `@unchecked Sendable`; observers (the relay, the event streams) run inside it.
@KeyValueObservable
final class Inventory: @unchecked Sendable {
    let lock = NSLock()   // a pthread mutex, which ThreadSanitizer sees
    var counts: [String: Int] = [:]   // per SKU
    var tags: Set<String> = []
    var price = 0.0
}

let inventory = Inventory()
var configuration = RelayConfiguration(
    postgres: try RelayConfiguration.environment(),
    channel: try RelayChannel(environment["RELAY_CHANNEL"] ?? "inventory"),
    instanceID: environment["INSTANCE_ID"], logger: logger)
configuration.signing = try RelaySigning.environment()   // nil when no key is set
configuration.shutdownTimeout = .seconds(3)
let relay = try Relay(configuration: configuration)
// Increments on every instance add up per SKU, and tags merge per member; the price is one
// value, the last write wins. The relay applies other instances' writes under the same lock.
let underLock = ReplicationIsolation.lock { apply in inventory.lock.withLock { apply() } }
try relay.replicate(\.counts, of: inventory, as: "inventory.counts", merging: .counterPerKey(), isolation: underLock)
try relay.replicate(\.tags, of: inventory, as: "inventory.tags", merging: .perMember(), isolation: underLock)
try relay.replicate(\.price, of: inventory, as: "inventory.price", isolation: underLock)

let router = Router()
router.get("items") { _, _ in
    inventory.lock.withLock {
        InventorySnapshot(counts: inventory.counts, tags: inventory.tags.sorted(), price: inventory.price)
    }
}
router.post("items/:sku") { request, context in
    let sku = try context.parameters.require("sku")
    let by = try request.uri.queryParameters.get("by").map { text in
        guard let by = Int(text) else { throw HTTPError(.badRequest, message: "by: not an integer") }
        return by
    } ?? 1
    return try inventory.lock.withLock {
        let (count, overflow) = inventory.counts[sku, default: 0].addingReportingOverflow(by)
        guard !overflow else { throw HTTPError(.badRequest, message: "by: the count would overflow") }
        inventory.counts[sku] = count
        return ItemCount(sku: sku, count: count)
    }
}
router.post("tags/:tag") { _, context in
    let tag = try context.parameters.require("tag")
    inventory.lock.withLock { _ = inventory.tags.insert(tag) }
    return HTTPResponse.Status.noContent
}
router.delete("tags/:tag") { _, context in
    let tag = try context.parameters.require("tag")
    inventory.lock.withLock { _ = inventory.tags.remove(tag) }
    return HTTPResponse.Status.noContent
}
router.put("price") { request, _ in
    guard let price = request.uri.queryParameters.get("value", as: Double.self), price.isFinite else {
        throw HTTPError(.badRequest, message: "value: not a finite number")
    }
    inventory.lock.withLock { inventory.price = price }
    return HTTPResponse.Status.noContent
}
router.get("ready") { _, _ in
    relay.isReady ? HTTPResponse.Status.ok : .serviceUnavailable
}
router.get("events") { _, _ in
    // Observed under the lock, so each sequence's first element, the current value, is read
    // under it; later elements are taken inside the writers' lock, as the writes happen.
    let changes = try inventory.lock.withLock {
        merge(
            try inventory.changes(for: \.counts).map(InventoryEvent.counts),
            try inventory.values(for: \.tags).map(InventoryEvent.tags),
            try inventory.values(for: \.price).map(InventoryEvent.price))
    }
    // A comment line every 15 s: a quiet stream notices a client that went away.
    let heartbeats = AsyncTimerSequence(interval: .seconds(15), clock: .continuous).map { _ in
        InventoryEvent.heartbeat
    }
    return Response(
        status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
        body: ResponseBody { writer in
            // Ends when the client goes (the write throws) and when graceful shutdown begins,
            // so an open stream never holds up SIGTERM.
            for await event in merge(changes, heartbeats).cancelOnGracefulShutdown() {
                try await writer.write(ByteBuffer(string: event.text))
            }
            try await writer.finish(nil)
        })
}
router.get("metrics") { _, _ in
    Response(
        status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.emitToString())))
}

var app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
app.beforeServerStarts {
    // No request is served before the relay listens and has loaded the current values.
    try await cancelWhenGracefulShutdown { try await relay.waitUntilReady() }
}
// Shut down in reverse order: the server first (no more writes), the relay last (it sends
// what the last requests queued).
let group = ServiceGroup(
    configuration: .init(
        services: [relay, EngineMetrics(), app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
try await group.run()
// README: end
print("stopped: \(relay.shutdownReport.map { "\($0.unsent) message(s) not sent" } ?? "no shutdown report")")

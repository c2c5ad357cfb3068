import Foundation
import Hummingbird
import SwiftKVO

/// What `GET /items` answers.
struct InventorySnapshot: JSONResponse {
    var counts: [String: Int]
    var tags: [String]
    var price: Double
}

/// What `POST /items/:sku` answers: the SKU's count after the addition.
struct ItemCount: JSONResponse {
    var sku: String
    var count: Int
}

/// A JSON answer with its keys sorted: instances holding the same values answer the same bytes.
protocol JSONResponse: Encodable, ResponseGenerator {}

extension JSONResponse {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(self))))
    }
}

/// One Server-Sent Event of `GET /events`.
enum InventoryEvent: Sendable {
    /// A change of the counts: the first carries them all, each later one the SKUs whose
    /// count it changed (`null` for a SKU removed).
    case counts(ObservedChange<[String: Int]>)
    /// The tags, whole, sorted.
    case tags(Set<String>)
    /// The price.
    case price(Double)
    /// A comment line, which clients ignore.
    case heartbeat

    /// The event as the stream carries it, blank line included.
    var text: String {
        switch self {
        case .counts(let change):
            let new = change.newValue ?? [:]
            var changed: [String: Int?] = new.mapValues { $0 }
            if !change.isInitial, let old = change.oldValue {
                changed = [:]
                for sku in Set(old.keys).union(new.keys) where old[sku] != new[sku] {
                    changed[sku] = .some(new[sku])
                }
            }
            return "event: counts\ndata: \(Self.json(changed))\n\n"
        case .tags(let tags):
            return "event: tags\ndata: \(Self.json(tags.sorted()))\n\n"
        case .price(let price):
            return "event: price\ndata: \(Self.json(price))\n\n"
        case .heartbeat:
            return ": heartbeat\n\n"
        }
    }

    private static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}

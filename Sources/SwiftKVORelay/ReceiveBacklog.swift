#if Relay
import DequeModule

/// Messages received from the broker and not yet handled: bounded, and fair
/// between senders.
///
/// The transport hands every message over at once (taking it costs a scan
/// of its first bytes), so the broker client's own buffer, which has no
/// bound, stays short; the relay then handles them one at a time. A message
/// is queued by its sender, as its first bytes name it (`{"o":"<id>"`, as
/// relays write it; anything else shares one queue), and the queues take
/// turns: a sender flooding the channel delays another sender's message by
/// at most one of its own per turn. A message is shed (dropped, counted in
/// ``RelayStatistics/droppedShed``) when its sender's queue holds
/// `perSender` bytes or all queues together hold `capacity` bytes (each
/// message counted as its UTF-8 bytes plus ``overhead``); an instance's shed
/// messages show up as a gap in its sequence, reported by
/// ``Relay/resynchronize``.
struct ReceiveBacklog {
    /// What a queued message costs besides its bytes (string and queue storage).
    static let overhead = 64
    let capacity: Int
    let perSender: Int
    private var queues: [String: (messages: Deque<String>, bytes: Int)] = [:]
    /// Senders with queued messages, in turn order.
    private var turns = Deque<String>()
    private(set) var count = 0
    private(set) var bytes = 0

    init(capacity: Int, perSender: Int) {
        self.capacity = max(1, capacity)
        self.perSender = max(1, min(perSender, capacity))
    }

    /// Queues `payload`; false if it was shed.
    mutating func push(_ payload: String) -> Bool {
        let cost = payload.utf8.count + Self.overhead
        guard bytes + cost <= capacity else { return false }
        let sender = Self.sender(of: payload)
        if let queued = queues[sender]?.bytes {
            guard queued + cost <= perSender else { return false }
            queues[sender]?.messages.append(payload)  // in place
            queues[sender]?.bytes += cost
        } else {
            queues[sender] = ([payload], cost)
            turns.append(sender)
        }
        count += 1
        bytes += cost
        return true
    }

    /// The next message: the oldest of the sender whose turn it is.
    mutating func pop() -> String? {
        guard let sender = turns.popFirst(), var queue = queues.removeValue(forKey: sender),
            let payload = queue.messages.popFirst()
        else { return nil }
        let cost = payload.utf8.count + Self.overhead
        queue.bytes -= cost
        if !queue.messages.isEmpty {
            queues[sender] = queue
            turns.append(sender)
        }
        count -= 1
        bytes -= cost
        return payload
    }

    /// The sender id a message's first bytes name (`{"o":"<id>"`, no escapes,
    /// at most 128 bytes), or "" for anything else. Only for fairness: the
    /// message is validated when it is handled.
    static func sender(of payload: String) -> String {
        let opening = #"{"o":""#.utf8
        let bytes = payload.utf8
        guard bytes.starts(with: opening) else { return "" }
        let start = bytes.index(bytes.startIndex, offsetBy: opening.count)
        var end = start
        var length = 0
        while end != bytes.endIndex, length <= Wire.maximumInstanceIDBytes {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { return String(payload[start..<end]) }
            if byte == UInt8(ascii: "\\") { return "" }
            bytes.formIndex(after: &end)
            length += 1
        }
        return ""
    }
}
#endif

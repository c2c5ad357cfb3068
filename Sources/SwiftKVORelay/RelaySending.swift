#if Relay
import Foundation
import SwiftKVO

// Sending: messages are numbered and queued, and one statement at a time
// carries the oldest of them (with the state-table rows of the property
// entries among them) to the broker.

extension Relay {
    func encodePost(_ name: NotificationHub.Name, _ userInfo: [String: any Sendable]) throws(RelayError) -> String {
        try Wire.postBody(name: name.rawValue, userInfo: userInfo)
    }

    /// Numbers `body` and queues it, or throws if it is too large or the
    /// queue is full (then the number is not used: no gap for receivers).
    /// If no statement is in flight, starts one from here. A property value
    /// comes with its entry and `stamp`, for the state table.
    func enqueue(_ body: String, entry: EntryID? = nil, stamp: UInt64 = 0) throws(RelayError) {
        let limit = configuration.transport.maximumPayloadBytes
        let capacity = configuration.outboxCapacity
        let outcome: Result<Statement?, RelayError> = state.withLock { state in
            guard !state.closed else { return .failure(.shuttingDown) }
            guard state.outbox.count < capacity else { return .failure(.outboxFull(capacity: capacity)) }
            let message = wireMessage(sequence: state.nextSequence, body: body)
            let bytes = message.utf8.count
            guard bytes <= limit else { return .failure(.payloadTooLarge(bytes: bytes, limit: limit)) }
            state.nextSequence += 1
            state.outbox.append(Outgoing(message: message, entry: entry, stamp: stamp))
            Self.remember(echoOf: message, in: &state)
            return .success(Self.nextStatement(&state))
        }
        if let statement = try outcome.get() { publish(statement) }
    }

    /// The message with `sequence` and `body`; signed, with its send time, if
    /// ``RelayConfiguration/signing`` is set.
    func wireMessage(sequence: UInt64, body: String) -> String {
        guard let signing = configuration.signing else {
            return Wire.message(prefix: wirePrefix, sequence: sequence, body: body)
        }
        return signing.sign(
            wirePrefix + String(sequence) + #","w":"# + String(Self.wallClockMicroseconds() / 1000) + body,
            channel: configuration.channel)
    }

    /// The most sent messages whose echo the relay waits for; past that, an
    /// echo is recognized by decoding it.
    private static let echoCapacity = 4096

    static func remember(echoOf message: String, in state: inout State) {
        let hash = message.hashValue
        if state.echoOrder.count >= echoCapacity, let oldest = state.echoOrder.popFirst() {
            state.echoes.remove(oldest)
        }
        if state.echoes.insert(hash).inserted { state.echoOrder.append(hash) }
    }

    /// The outbox's first messages, on one connection's publisher, with the
    /// state-table rows of the property values among them (the last of each entry).
    struct Statement {
        let publisher: any RelayPublisher
        let messages: [String]
        let rows: [RelayStateRow]
        let connection: UInt64
    }

    /// The next statement to publish, if there is a publisher, no statement in
    /// flight, and something queued: at most ``batchLimit`` of the oldest messages.
    static func nextStatement(_ state: inout State) -> Statement? {
        guard state.publishing == 0, let publisher = state.publisher, !state.outbox.isEmpty else { return nil }
        let batch = state.outbox.prefix(batchLimit)
        var rowOfEntry: [EntryID: RelayStateRow] = [:]
        for outgoing in batch {
            guard let entry = outgoing.entry else { continue }
            // The newest write of an entry in the batch (writers on two
            // threads may queue in another order than they stamped).
            let row = RelayStateRow(
                name: entry.name, entry: entry.entry, stamp: Int64(clamping: outgoing.stamp), instance: "",
                message: outgoing.message, messageBytes: outgoing.message.utf8.count)
            if let held = rowOfEntry[entry], held.stamp > row.stamp { continue }
            rowOfEntry[entry] = row
        }
        // In one order on every instance: two statements upserting the same
        // rows never wait for each other in a cycle.
        let rows = rowOfEntry.values.sorted { ($0.name, $0.entry) < ($1.name, $1.entry) }
        state.publishing = batch.count
        return Statement(
            publisher: publisher, messages: batch.map(\.message), rows: rows, connection: state.connection)
    }

    /// Publishes `statement`, then the next one when it completes, and so on
    /// until the outbox is empty. One statement is in flight at a time, so
    /// messages reach the broker in queue order; no task waits on it, so a
    /// closing connection holds nothing (its publisher fails the completion).
    /// Messages leave the queue only once published: after a failure they are
    /// sent again on the next connection (receivers drop the copies that had arrived).
    func publish(_ statement: Statement) {
        if !statement.rows.isEmpty, let table = configuration.stateTable,
            let keeper = statement.publisher as? any RelayStatePublisher
        {
            let instance = configuration.instanceID
            let rows = statement.rows.map { row in
                var row = row
                row.instance = instance
                return row
            }
            let horizon = Int64(clamping: stampHorizon)
            keeper.publish(statement.messages, recording: rows, in: table, horizon: horizon) { result in
                self.completed(statement, result)
            }
            return
        }
        statement.publisher.publish(statement.messages) { result in self.completed(statement, result) }
    }

    func completed(_ statement: Statement, _ result: Result<Void, any Error>) {
        let (next, failed) = state.withLock { state -> (Statement?, AsyncStream<any Error>.Continuation?) in
            guard state.connection == statement.connection else { return (nil, nil) }
            state.publishing = 0
            switch result {
            case .success:
                state.outbox.removeFirst(statement.messages.count)
                state.statistics.sent.addSaturating(statement.messages.count)
                return (Self.nextStatement(&state), nil)
            case .failure:
                state.publisher = nil
                return (nil, state.publishFailed)
            }
        }
        if let next { publish(next) }
        if case .failure(let error) = result { failed?.yield(error) }
    }
}
#endif

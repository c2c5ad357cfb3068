#if Relay
import Foundation
import SwiftKVO

// Loading replicated values from the state table (RelayStateTable).
//
// A load is asked for when the relay starts listening (the first time and
// after every reconnect), when another instance's messages were missed or it
// restarted, and when a name is replicated while the relay listens. Requests
// made while a load runs are folded into the next one. A load reads the rows
// of every replicated name on the current connection — after its LISTEN, so
// nothing committed in between can be missed — and hands them to the task
// that handles received messages, which applies them as it applies remote
// values (last writer wins, observers told, nothing sent again): every
// remote value is still assigned on that one task, one at a time. Then the
// resynchronizations owed are posted, each saying which names the load
// brought up to date (`"updated"`).

extension Relay {
    /// What the next load is for.
    struct StateRequest {
        /// The connection whose first load this is (waiters are released after it).
        var connection: UInt64?
        /// Post a `"reconnected"` resynchronization after it.
        var reconnected = false
        /// Post these resynchronizations after it.
        var reports: [Report] = []
        /// Load for a newly replicated name (nothing to post).
        var registered = false

        var isEmpty: Bool { connection == nil && !reconnected && reports.isEmpty && !registered }
    }

    /// Rows read, waiting for the receiving task; closed once that task ended.
    struct StateInbox {
        var deliveries: [(rows: [RelayStateRow], done: CheckedContinuation<[String], Never>)] = []
        var closed = false
    }

    /// Whether loads happen: a state table is configured and the current
    /// connection's publisher can keep state.
    static func keepsState(_ state: State, _ configuration: RelayConfiguration) -> Bool {
        configuration.stateTable != nil && state.publisher is any RelayStatePublisher
    }

    /// Asks for a load, to run on ``loadStateOnRequest()``.
    func requestStateLoad(_ change: (inout StateRequest) -> Void) {
        state.withLock { change(&$0.stateRequest) }
        ringLoader.yield()
    }

    /// Runs the loads asked for, one at a time, until cancelled.
    func loadStateOnRequest() async {
        for await _ in loaderBell {
            while true {
                let next = state.withLock { state -> (StateRequest, (any RelayStatePublisher)?, [String])? in
                    guard !state.stateRequest.isEmpty else { return nil }
                    defer { state.stateRequest = StateRequest() }
                    let publisher = Self.keepsState(state, configuration) ? state.publisher as? any RelayStatePublisher : nil
                    return (state.stateRequest, publisher, state.replications.keys.sorted())
                }
                guard let (request, publisher, names) = next else { break }
                var updated: [String] = []
                if let publisher, let table = configuration.stateTable, !names.isEmpty {
                    do {
                        let rows = try await publisher.loadState(
                            of: names, from: table, maximumMessageBytes: configuration.transport.maximumPayloadBytes)
                        updated = await apply(rows)
                        state.withLock { $0.statistics.stateLoads.addSaturating(1) }
                    } catch {
                        state.withLock { $0.statistics.stateLoadFailures.addSaturating(1) }
                        configuration.logger.warning(
                            "relay could not load replicated values",
                            metadata: ["table": "\(table.name)", "error": "\(RelayErrorDescription.describe(error))"])
                    }
                }
                finish(request, updated: updated)
            }
        }
    }

    /// Applies `rows` on the receiving task; the names whose values changed, sorted.
    private func apply(_ rows: [RelayStateRow]) async -> [String] {
        guard !rows.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            let closed = stateInbox.withLock { inbox in
                if !inbox.closed { inbox.deliveries.append((rows, continuation)) }
                return inbox.closed
            }
            if closed { continuation.resume(returning: []) } else { ring.yield() }
        }
    }

    /// Applies the rows waiting in the inbox (on the receiving task).
    func applyLoadedState() {
        let deliveries = stateInbox.withLock { inbox in
            defer { inbox.deliveries.removeAll() }
            return inbox.deliveries
        }
        guard !deliveries.isEmpty else { return }
        let decoder = JSONDecoder()
        decoder.userInfo[Wire.Resolver.codingKey] = resolver
        for delivery in deliveries {
            let updated = delivery.rows.compactMap { applyStateRow($0, decoder: decoder) }
            delivery.done.resume(returning: Array(Set(updated)).sorted())
        }
    }

    /// No more rows will be applied: the receiving task ended.
    func closeStateInbox() {
        let deliveries = stateInbox.withLock { inbox in
            inbox.closed = true
            defer { inbox.deliveries.removeAll() }
            return inbox.deliveries
        }
        for delivery in deliveries { delivery.done.resume(returning: []) }
    }

    /// Applies one row, as a remote value; its name if that changed the value.
    ///
    /// A row is hostile input like a message from the wire, and dropped and
    /// counted under the same reasons: too long (``RelayStatistics/droppedOversized``),
    /// not the relay's format or not matching its own columns
    /// (``RelayStatistics/droppedMalformed``), a value of the wrong type
    /// (``RelayStatistics/droppedWrongType``), stamped too far ahead
    /// (``RelayStatistics/droppedFutureStamp``), and when signing is on,
    /// unsigned or wrongly signed (``RelayStatistics/droppedUnsigned``,
    /// ``RelayStatistics/droppedBadSignature``). A signed row's send time is
    /// not checked: the row is the last write, however old. A row older than
    /// the value held is not applied and not counted as dropped.
    private func applyStateRow(_ row: RelayStateRow, decoder: JSONDecoder) -> String? {
        let limit = configuration.transport.maximumPayloadBytes
        guard var payload = row.message, row.messageBytes <= limit, payload.utf8.count <= limit else {
            drop(.oversized)
            return nil
        }
        if let signing = configuration.signing {
            switch signing.verify(payload) {
            case .unsigned:
                drop(.unsigned)
                return nil
            case .wronglySigned:
                drop(.badSignature)
                return nil
            case .valid(let message): payload = message
            }
        }
        guard
            let message = try? decoder.decode(Wire.Incoming.self, from: Data(payload.utf8)),
            message.envelope.v == Wire.version, Wire.isValidInstanceID(message.envelope.o),
            message.envelope.t == .set, message.envelope.n == row.name, message.envelope.o == row.instance
        else {
            drop(.malformed)
            return nil
        }
        let instance = message.envelope.o
        switch message.body {
        case .post:
            drop(.malformed, instance)
        case .unknownName:
            break  // no longer replicated
        case .wrongType:
            drop(.wrongType, instance)
        case .set(let replication, let stamp, let value):
            guard stamp == UInt64(clamping: row.stamp), row.stamp >= 0 else {
                drop(.malformed, instance)
                return nil
            }
            guard stamp <= stampHorizon else {
                drop(.futureStamp, instance)
                return nil
            }
            switch replication.applyRemote(value, stamp: stamp, from: instance, relay: self) {
            case .applied:
                state.withLock { $0.statistics.stateValuesApplied.addSaturating(1) }
                return row.name
            case .stale:
                break
            case .wrongType:
                drop(.wrongType, instance)
            case .gone:
                stopReplicating(replication.name)
            }
        }
        return nil
    }

    /// After a load: releases waiters if it was the connection's first, and
    /// posts the resynchronizations owed, with the names it updated.
    private func finish(_ request: StateRequest, updated: [String]) {
        if let connection = request.connection {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
                guard state.connection == connection, state.isListening else { return [] }
                state.stateIsCurrent = true
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
        if request.reconnected {
            state.withLock { $0.statistics.resynchronizations.addSaturating(1) }
            postResynchronize(["reason": "reconnected", "updated": updated])
        }
        for report in request.reports { postReport(report, updated: updated) }
    }
}
#endif

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
// that handles received messages, which merges them as it merges remote
// entries (each under its replication's isolation, observers told, nothing
// sent again): every remote value is still assigned from that one task, one
// at a time. The first load of a name then lets its local writes go: those
// held until then are sent, merged with what was loaded. Then the
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

    /// The names a load reads, with the replication each had when it started:
    /// a name replicated again meanwhile is not the one loaded.
    typealias Loading = [String: ObjectIdentifier]

    /// Rows read, waiting for the receiving task; closed once that task ended.
    struct StateInbox {
        var deliveries: [(rows: [RelayStateRow], loading: Loading, done: CheckedContinuation<[String], Never>)] = []
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
                let next = state.withLock { state -> (StateRequest, (any RelayPublisher)?, UInt64, Loading)? in
                    guard !state.stateRequest.isEmpty else { return nil }
                    defer { state.stateRequest = StateRequest() }
                    let loading = state.replications.mapValues { ObjectIdentifier($0) }
                    return (state.stateRequest, state.publisher, state.connection, loading)
                }
                guard let (request, publisher, connection, loading) = next else { break }
                var updated: [String] = []
                var loaded = true
                if let publisher, !loading.isEmpty {
                    if let keeper = publisher as? any RelayStatePublisher, let table = configuration.stateTable {
                        do {
                            let rows = try await keeper.loadState(
                                of: loading.keys.sorted(), from: table,
                                maximumMessageBytes: configuration.transport.maximumPayloadBytes,
                                maximumRows: Self.maximumLoadedRows)
                            if rows.count >= Self.maximumLoadedRows {
                                configuration.logger.error(
                                    "relay loaded only the first of its replicated entries",
                                    metadata: ["table": "\(table.name)", "rows": "\(rows.count)"])
                            }
                            await resignOutdated(rows, keeper: keeper, table: table)
                            updated = await apply(rows, loading: loading)
                            state.withLock { $0.statistics.stateLoads.addSaturating(1) }
                        } catch {
                            state.withLock { $0.statistics.stateLoadFailures.addSaturating(1) }
                            configuration.logger.warning(
                                "relay could not load replicated values",
                                metadata: [
                                    "table": "\(table.name)",
                                    "error": "\(Wire.loggableError(RelayErrorDescription.describe(error)))",
                                ])
                            if error is RelayStateTableError {
                                // A table that cannot be used will not be read on
                                // a later try either: the relay goes on without
                                // it (the reason was logged as an error).
                                _ = await apply([], loading: loading)
                            } else {
                                // Anything else may pass: the connection starts
                                // over, and its first load with it. Held writes
                                // stay held meanwhile.
                                loaded = false
                                let failed = state.withLock { $0.connection == connection ? $0.publishFailed : nil }
                                failed?.yield(error)
                            }
                        }
                    } else {
                        // Nothing keeps state: nothing to wait for.
                        _ = await apply([], loading: loading)
                    }
                }
                finish(request, updated: updated, loaded: loaded)
            }
        }
    }

    /// Signs again, with the current key and covering the channel, the rows
    /// signed with a previous key (or without the channel): once that key is
    /// retired they would no longer verify, and their values would be lost.
    /// A failure is logged and left for the next load.
    private func resignOutdated(_ rows: [RelayStateRow], keeper: any RelayStatePublisher, table: RelayStateTable) async {
        guard let signing = configuration.signing else { return }
        let channel = configuration.channel
        let outdated = rows.compactMap { row -> (row: RelayStateRow, message: String)? in
            guard let message = row.message,
                case .valid(let payload, outdated: true) = signing.verify(message, channel: channel)
            else { return nil }
            return (row, signing.sign(payload, channel: channel))
        }
        guard !outdated.isEmpty else { return }
        do {
            try await keeper.resign(outdated, in: table)
            state.withLock { $0.statistics.stateRowsResigned.addSaturating(outdated.count) }
            configuration.logger.info(
                "relay signed state-table rows again with its current key",
                metadata: ["table": "\(table.name)", "rows": "\(outdated.count)", "key": "\(signing.current.id)"])
        } catch {
            configuration.logger.warning(
                "relay could not sign state-table rows again with its current key",
                metadata: [
                    "table": "\(table.name)", "rows": "\(outdated.count)",
                    "error": "\(Wire.loggableError(RelayErrorDescription.describe(error)))",
                ])
        }
    }

    /// The most rows one load reads (every entry of every replicated name).
    static let maximumLoadedRows = 1_000_000

    /// Applies `rows` on the receiving task, and ends the first load of
    /// the names in `loading` there; the names whose values changed, sorted.
    private func apply(_ rows: [RelayStateRow], loading: Loading) async -> [String] {
        let firstLoad = state.withLock { state in loading.keys.contains { !state.loadedNames.contains($0) } }
        guard !rows.isEmpty || firstLoad else { return [] }
        return await withCheckedContinuation { continuation in
            let closed = stateInbox.withLock { inbox in
                if !inbox.closed { inbox.deliveries.append((rows, loading, continuation)) }
                return inbox.closed
            }
            if closed { continuation.resume(returning: []) } else { ring.yield() }
        }
    }

    /// Applies the rows waiting in the inbox, then sends the writes held for
    /// the names loaded the first time (on the receiving task).
    func applyLoadedState() async {
        let deliveries = stateInbox.withLock { inbox in
            defer { inbox.deliveries.removeAll() }
            return inbox.deliveries
        }
        guard !deliveries.isEmpty else { return }
        let decoder = JSONDecoder()
        decoder.userInfo[Wire.Resolver.codingKey] = resolver
        for delivery in deliveries {
            var updated: Set<String> = []
            for row in delivery.rows {
                guard let entry = validated(row, decoder: decoder),
                    delivery.loading[row.name] == ObjectIdentifier(entry.replication)
                else { continue }
                let result = LockedState(RemoteSetResult.stale)
                await entry.replication.isolation.run {
                    let outcome = entry.replication.applyRemote(
                        entry.value, entry: entry.entry, stamp: entry.stamp, from: entry.writer, relay: self)
                    result.withLock { $0 = outcome }
                }
                switch result.withLock({ $0 }) {
                case .applied:
                    state.withLock { $0.statistics.stateValuesApplied.addSaturating(1) }
                    updated.insert(row.name)
                case .stale:
                    break
                case .wrongType:
                    drop(.wrongType, entry.writer.id)
                case .gone:
                    stopReplicating(entry.replication.name)
                }
            }
            await endFirstLoad(of: delivery.loading)
            delivery.done.resume(returning: updated.sorted())
        }
    }

    /// Marks the names of `loading` loaded (those still replicated by the
    /// replication loaded), and sends what was written to them before.
    private func endFirstLoad(of loading: Loading) async {
        let held = state.withLock { state in
            loading.compactMap { name, loaded -> (any Replicating, Set<String>)? in
                guard let replication = state.replications[name], ObjectIdentifier(replication) == loaded,
                    state.loadedNames.insert(name).inserted
                else { return nil }
                return (replication, state.heldEntries.removeValue(forKey: name) ?? [])
            }
        }
        for (replication, entries) in held where !entries.isEmpty {
            await replication.isolation.run { replication.publishHeld(entries, relay: self) }
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

    /// A row read by a load, decoded and checked.
    struct LoadedEntry {
        var replication: any Replicating
        var entry: String
        var stamp: UInt64
        var writer: Writer
        var value: any Sendable
    }

    /// One row, decoded and checked as a remote entry; nil if it is not to be applied.
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
    private func validated(_ row: RelayStateRow, decoder: JSONDecoder) -> LoadedEntry? {
        let limit = configuration.transport.maximumPayloadBytes
        guard let stored = row.message, row.messageBytes <= limit, stored.utf8.count <= limit else {
            drop(.oversized)
            return nil
        }
        guard let payload = verified(stored, row: row.name) else { return nil }
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
        case .set(let replication, let entry, let stamp, let value):
            guard stamp == UInt64(clamping: row.stamp), row.stamp >= 0, entry == row.entry else {
                drop(.malformed, instance)
                return nil
            }
            guard stamp <= stampHorizon else {
                drop(.futureStamp, instance)
                return nil
            }
            return LoadedEntry(
                replication: replication, entry: entry, stamp: stamp,
                writer: Writer(id: instance, incarnation: message.envelope.i), value: value)
        }
        return nil
    }

    /// After a load: releases waiters if it was the connection's first and
    /// it `loaded`, and posts the resynchronizations owed, with the names it
    /// updated. (A load that did not complete ends its connection: the next
    /// one loads, and posts its reconnection, again.)
    private func finish(_ request: StateRequest, updated: [String], loaded: Bool) {
        if let connection = request.connection, loaded {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
                guard state.connection == connection, state.isListening else { return [] }
                state.stateIsCurrent = true
                state.isReady = true
                defer { state.waiters.removeAll() }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }
        if request.reconnected, loaded {
            state.withLock { $0.statistics.resynchronizations.addSaturating(1) }
            postResynchronize(["reason": "reconnected", "updated": updated])
        }
        for report in request.reports { postReport(report, updated: updated) }
    }
}
#endif

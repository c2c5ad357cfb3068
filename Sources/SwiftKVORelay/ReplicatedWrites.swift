#if Relay
import Foundation
import SwiftKVO

// Replicated properties on the relay's side: registering them, stamping and
// sending local writes (or holding them until the first load), accepting
// remote ones, and readiness.

extension Relay {
    /// One entry of a replicated name (see ``ReplicationPolicy``): `""` for the whole value.
    struct EntryID: Hashable {
        var name: String
        var entry: String
    }

    /// Keeps `object`'s property at `keyPath` the same on every instance that
    /// replicates it under `name` (e.g. `"flags.checkout"`), combining
    /// concurrent writes as `policy` says.
    ///
    /// A local assignment is sent (after local observers were notified, from
    /// the observation the relay registers), as the entries it changed (see
    /// ``ReplicationPolicy``). A remote entry is merged here, under
    /// `isolation`; local observers see it as a normal change, and it is not
    /// sent again. An assignment made synchronously by an observer while a
    /// remote value is being assigned counts as part of it and is not sent
    /// either. Stamps are the writer's clock: a hybrid of wall-clock
    /// microseconds and the highest stamp seen; between writes of one entry
    /// with equal stamps, the higher instance id (in UTF-8 byte order) wins.
    ///
    /// With a state table (``RelayConfiguration/stateTable``, the default),
    /// each entry sent is also recorded there in the same transaction, and
    /// the relay loads the table's entries of its replicated names when it
    /// starts listening, after every reconnect, when another instance's
    /// messages were missed or it restarted, and when `name` is replicated
    /// while listening. A loaded entry is merged like a remote one. Until the
    /// first load of `name` is done, local writes are held, not sent: they
    /// then merge with what was loaded and are sent, so an instance started
    /// while the database is down never replaces values it has not seen
    /// (see ``waitUntilReady()`` to hold requests until then). Without a
    /// state table an instance learns an entry when someone writes it. An
    /// entry whose message would exceed the broker's limit is not sent
    /// (counted in ``RelayStatistics/notSent``, logged).
    /// Replication ends with ``stopReplicating(_:)`` or when the object deinitializes.
    ///
    /// - Parameters:
    ///   - keyPath: An `@Observed` property of `object` (a whole property: to
    ///     replicate entries of a dictionary, replicate the dictionary with
    ///     ``ReplicationPolicy/perKey()`` or ``ReplicationPolicy/counterPerKey()``).
    ///   - object: The object; held weakly.
    ///   - name: The property's stable name, the same on every instance.
    ///   - policy: How concurrent writes combine; the same on every instance.
    ///     ``ReplicationPolicy/lastWriterWins`` by default.
    ///   - isolation: Where remote writes are applied: ``ReplicationIsolation/relayTask``
    ///     by default, or under the lock or on the actor that guards `object`.
    /// - Throws: ``RelayError/duplicateName(_:)`` if `name` is already used
    ///   by this relay; ``RelayError/registration(_:)`` if SwiftKVO cannot
    ///   observe `keyPath` (nothing is replicated then).
    public func replicate<Object: KeyValueObservable, Value: Codable & Sendable>(
        _ keyPath: ReferenceWritableKeyPath<Object, Value>, of object: Object, as name: String,
        merging policy: ReplicationPolicy<Value> = .lastWriterWins,
        isolation: ReplicationIsolation = .relayTask
    ) throws(RelayError) {
        let replication = Replication(
            name: name, object: object, keyPath: keyPath, policy: policy, isolation: isolation)
        let added = state.withLock { state in
            guard state.bridges[name] == nil, state.replications[name] == nil else { return false }
            state.replications[name] = replication
            if configuration.stateTable == nil { state.loadedNames.insert(name) }
            return true
        }
        guard added else { throw .duplicateName(name) }
        do {
            try replication.start(relay: self)
        } catch {
            forget(name)
            throw .registration(error)
        }
        if state.withLock({ $0.isListening && $0.publisher != nil }) {
            requestStateLoad { $0.registered = true }
        }
    }

    /// Stops replicating `name`. Returns `false` if it was not replicated.
    @discardableResult
    public func stopReplicating(_ name: String) -> Bool {
        guard let replication = forget(name) else { return false }
        replication.stop()
        return true
    }

    @discardableResult
    private func forget(_ name: String) -> (any Replicating)? {
        state.withLock { state in
            state.loadedNames.remove(name)
            state.heldEntries.removeValue(forKey: name)
            state.lastWrites = state.lastWrites.filter { $0.key.name != name }
            return state.replications.removeValue(forKey: name)
        }
    }

    // MARK: Readiness

    /// Whether the relay has listened and loaded the replicated values at
    /// least once (or keeps no state): from then on, local writes of the
    /// names replicated so far are sent as they happen. It stays `true`
    /// across reconnects.
    public var isReady: Bool { state.withLock { $0.isReady } }

    /// Returns once ``isReady`` (at once if it is already): the relay has
    /// listened and, if it keeps state, loaded the values of the properties
    /// it replicates. Hold a service's requests until then, e.g. with
    /// Hummingbird's `beforeServerStarts`, so that it never answers from
    /// state it has not loaded (see <doc:RunningAsAService>).
    ///
    /// - Throws: `CancellationError` if the waiting task is cancelled first.
    public func waitUntilReady() async throws {
        while !isReady {
            try await waitUntilListening()
        }
    }

    // MARK: Writes

    /// How entries held for a first load are sent.
    enum HeldStamps {
        /// Last writer wins: each with the stamp it was written with, and
        /// only if that write is still the entry's last (a loaded newer one
        /// replaced it otherwise).
        case stamped
        /// Merged whatever their stamp: with a new one.
        case restamped
    }

    /// A local write of `entries` of `name`: stamps them and sends what
    /// `payloads` gives for them (called under the relay's lock, when the
    /// write is stamped), or holds them until the first load of `name`.
    /// `held`: these are held entries, sent after that load.
    func publish(name: String, entries: [String], held: HeldStamps? = nil, payloads: () -> [EntryWrite]) {
        let instance = configuration.instanceID
        let stamped: [(stamp: UInt64, write: EntryWrite)] = state.withLock { state in
            guard state.replications[name] != nil else { return [] }
            // Saturating: remote stamps are bounded by the clock skew, but never trap.
            let next = state.clock == .max ? state.clock : state.clock + 1
            let fresh = max(Self.wallClockMicroseconds(), next)
            var stamps: [String: UInt64] = [:]
            for entry in entries {
                let id = EntryID(name: name, entry: entry)
                if held == .stamped {
                    guard let last = state.lastWrites[id], last.instance == instance else { continue }
                    stamps[entry] = last.stamp
                } else {
                    stamps[entry] = fresh
                    state.lastWrites[id] = (fresh, instance)
                }
            }
            guard !stamps.isEmpty else { return [] }
            state.clock = max(state.clock, fresh)
            guard state.loadedNames.contains(name) else {
                state.heldEntries[name, default: []].formUnion(stamps.keys)
                return []
            }
            return payloads().compactMap { write in stamps[write.entry].map { ($0, write) } }
        }
        for (stamp, write) in stamped {
            guard write.entry.utf8.count <= EntryKey.maximumBytes else {
                state.withLock { $0.statistics.notSent += 1 }
                configuration.logger.warning(
                    "relay did not send a property value",
                    metadata: [
                        "name": "\(Wire.loggable(name))",
                        "error": "its key takes \(write.entry.utf8.count) bytes; at most \(EntryKey.maximumBytes) are sent",
                    ])
                continue
            }
            do {
                try enqueue(
                    Wire.setBody(name: name, entry: write.entry, stamp: stamp, value: write.payload),
                    entry: EntryID(name: name, entry: write.entry), stamp: stamp)
            } catch {
                state.withLock { $0.statistics.notSent += 1 }
                configuration.logger.warning(
                    "relay did not send a property value",
                    metadata: [
                        "name": "\(Wire.loggable(name))",
                        "error": "\(Wire.loggableError("\(error)"))",
                    ])
            }
        }
    }

    /// Last writer wins: whether a remote write of `id` is newer than the
    /// last one, in which case it becomes the last one and `record` runs
    /// (under the lock that orders writes).
    func acceptRemoteWrite(_ id: EntryID, stamp: UInt64, instance: String, record: () -> Void) -> Bool {
        state.withLock { state in
            state.clock = max(state.clock, stamp)
            // Instance ids in byte order, as the state table's `COLLATE "C"` compares them.
            if let last = state.lastWrites[id],
                last.stamp > stamp || (last.stamp == stamp && !last.instance.utf8.lexicographicallyPrecedes(instance.utf8))
            {
                return false
            }
            state.lastWrites[id] = (stamp, instance)
            record()
            return true
        }
    }

    /// A remote entry merged whatever its stamp: local stamps go above it.
    func observeStamp(_ stamp: UInt64) {
        state.withLock { $0.clock = max($0.clock, stamp) }
    }

    /// The last write of `id` if it is no longer the one stamped `stamp` by
    /// `instance`, with its value read by `latest` (under the lock that
    /// orders writes); `nil` if it still is.
    func write<Value: Sendable>(
        of id: EntryID, after stamp: UInt64, by instance: String, latest: () -> Value?
    ) -> (stamp: UInt64, instance: String, value: Value)? {
        state.withLock { state in
            guard let last = state.lastWrites[id], last.stamp != stamp || last.instance != instance,
                let value = latest()
            else { return nil }
            return (last.stamp, last.instance, value)
        }
    }

    static func wallClockMicroseconds() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
    }

    /// The latest stamp accepted from another instance now: the wall clock
    /// plus ``RelayConfiguration/maximumClockSkew`` (saturating).
    var stampHorizon: UInt64 {
        let skew = configuration.maximumClockSkew.components
        let seconds = UInt64(clamping: skew.seconds)
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let micros = overflow ? UInt64.max : whole + UInt64(clamping: skew.attoseconds / 1_000_000_000_000)
        let (sum, late) = Self.wallClockMicroseconds().addingReportingOverflow(micros)
        return late ? .max : sum
    }
}
#endif

#if Relay
import SwiftKVO

/// One replicated property: the object (held weakly), its key path, its name
/// on the wire, its policy's merger, where remote writes are applied, and
/// the observation that publishes local changes.
protocol Replicating: AnyObject, Sendable {
    var name: String { get }
    var isolation: ReplicationIsolation { get }
    /// Decodes a "set" message's entry and value as the policy's types.
    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable
    /// Applies a decoded entry if the policy accepts it; call it under ``isolation``.
    func applyRemote(
        _ decoded: any Sendable, entry: String, stamp: UInt64, from writer: Writer, relay: Relay
    ) -> RemoteSetResult
    /// Sends the entries written before the first load, as the value holds
    /// them now, with the stamps they were written with; call it under ``isolation``.
    func publishHeld(_ entries: Set<String>, relay: Relay)
    /// Stops publishing local changes.
    func stop()
}

enum RemoteSetResult {
    case applied
    case stale
    case wrongType
    /// The object deinitialized: the replication is over.
    case gone
}

final class Replication<Object: KeyValueObservable, Value: Codable & Sendable>: Replicating,
    @unchecked Sendable
{
    // `object` and `keyPath` are set once; the object is only touched through
    // the key path, under `isolation` or on the writing thread's own change.
    let name: String
    let isolation: ReplicationIsolation
    private weak var object: Object?
    private let keyPath: ReferenceWritableKeyPath<Object, Value>
    /// Taken inside the relay's state lock, never the other way round.
    private let merger: LockedState<any EntryMerger<Value>>
    /// The same merger, for decoding, which reads no state: no lock is held
    /// while a value's own decoder runs.
    private let entryDecoder: any EntryMerger<Value>
    private let acceptsByStamp: Bool
    private let token = LockedState<ObservationToken?>(nil)

    /// Set while a remote value is being assigned (on the assigning thread).
    private static var applying: ThreadMarker { relayApplyingMarker }

    init(
        name: String, object: Object, keyPath: ReferenceWritableKeyPath<Object, Value>,
        policy: ReplicationPolicy<Value>, isolation: ReplicationIsolation
    ) {
        self.name = name
        self.object = object
        self.keyPath = keyPath
        self.isolation = isolation
        let merger = policy.makeMerger()
        acceptsByStamp = merger.acceptsByStamp
        entryDecoder = merger
        self.merger = LockedState(merger)
    }

    /// Starts publishing local changes through `relay`.
    func start(relay: Relay) throws(KVOError) {
        let writer = Writer(id: relay.instanceID, incarnation: relay.incarnation)
        let token = try object?.observe(keyPath, options: [.old, .new]) { [weak self, weak relay] object, change in
            guard let self, let relay, !Self.applying.isSet(self) else { return }
            let writes = self.merger.withLock { merger in
                if change.kind == .setting, let old = change.oldValue, let new = change.newValue {
                    return merger.writes(from: old, to: new, writer: writer)
                }
                // Through a mutable proxy: the elements taken out and put in.
                return merger.writes(
                    removed: change.oldValue, added: change.newValue, current: { object[keyPath: self.keyPath] },
                    writer: writer)
            }
            guard !writes.isEmpty else { return }
            // The whole value is read again when the write is stamped: a
            // remote value stored since this change (see applyRemote) is
            // then sent as this write, so every instance ends with the value
            // this one holds.
            relay.publish(name: self.name, entries: writes.map(\.entry)) {
                guard self.acceptsByStamp, writes.count == 1, writes[0].entry.isEmpty else { return writes }
                let value = object[keyPath: self.keyPath]
                return self.merger.withLock { merger in
                    merger.payload(of: "", in: value, writer: writer).map { [EntryWrite(entry: "", payload: $0)] } ?? []
                }
            }
        }
        self.token.withLock { $0 = token }
    }

    func stop() {
        token.withLock { $0.take() }?.invalidate()
    }

    func decode(entry: String, from decoder: any Decoder) throws -> any Sendable {
        try entryDecoder.decode(entry: entry, from: decoder)
    }

    func applyRemote(
        _ decoded: any Sendable, entry: String, stamp: UInt64, from writer: Writer, relay: Relay
    ) -> RemoteSetResult {
        guard let object else { return .gone }
        let id = Relay.EntryID(name: name, entry: entry)
        if acceptsByStamp {
            let recorded = relay.acceptRemoteWrite(id, stamp: stamp, instance: writer.id) {
                merger.withLock { ($0 as? WholeValueMerger<Value>)?.latest = decoded as? Value }
            }
            guard recorded else { return .stale }
        } else {
            relay.observeStamp(stamp)
        }
        // The store happens after the write was accepted, outside the lock
        // (observers run inside it). For the whole value, a write accepted
        // or stamped in between is newer: a local one stored before this
        // store was overwritten by it. So the newest write's value is stored
        // again, until no write came in between; a local one stored after
        // that is stamped after, and sends what the property then holds.
        var written = (stamp: stamp, writer: writer, decoded: decoded)
        var outcome = MergeOutcome.unchanged
        while true {
            Self.applying.with(self) {
                var value = object[keyPath: keyPath]
                outcome = merger.withLock { $0.merge(written.decoded, from: written.writer, into: &value) }
                if case .changed = outcome { object[keyPath: keyPath] = value }
            }
            guard case .changed = outcome, entry.isEmpty, acceptsByStamp,
                let newer = relay.write(
                    of: id, after: written.stamp, by: written.writer.id,
                    latest: { merger.withLock { ($0 as? WholeValueMerger<Value>)?.latest } })
            else { break }
            // Whoever wrote it last: the whole value merges the same from anyone.
            written = (newer.stamp, Writer(id: newer.instance, incarnation: 0), newer.value)
        }
        switch outcome {
        case .changed: return .applied
        case .unchanged: return .stale
        case .rejected: return .wrongType
        }
    }

    func publishHeld(_ entries: Set<String>, relay: Relay) {
        guard let object, !entries.isEmpty else { return }
        let writer = Writer(id: relay.instanceID, incarnation: relay.incarnation)
        relay.publish(name: name, entries: Array(entries), held: acceptsByStamp ? .stamped : .restamped) {
            let value = object[keyPath: keyPath]
            return merger.withLock { merger in
                entries.compactMap { entry in
                    merger.payload(of: entry, in: value, writer: writer).map { EntryWrite(entry: entry, payload: $0) }
                }
            }
        }
    }
}

/// One marker for every replication: the mark is the replication itself.
let relayApplyingMarker = ThreadMarker()
#endif

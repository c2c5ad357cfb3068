#if Relay
import SwiftKVO

/// One replicated property: the object (held weakly), its key path, its name
/// on the wire, and the observation that publishes local changes.
protocol Replicating: AnyObject, Sendable {
    var name: String { get }
    /// Decodes a "set" message's value as the property's type.
    func decodeValue(from decoder: any Decoder) throws -> any Sendable
    /// Assigns a decoded value if the relay accepts its stamp (last writer wins).
    func applyRemote(_ value: any Sendable, stamp: UInt64, from instance: String, relay: Relay) -> RemoteSetResult
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
    // the key path, from the relay's receive task, as documented on
    // Relay.replicate.
    let name: String
    private weak var object: Object?
    private let keyPath: ReferenceWritableKeyPath<Object, Value>
    private let token = LockedState<ObservationToken?>(nil)
    /// The value of the last write of `name` the relay knows (this
    /// instance's or another's): written and read only under the relay's
    /// state lock, with the stamp it keeps for `name`.
    private var latest: Value?

    /// Set while a remote value is being assigned (on the assigning thread).
    private static var applying: ThreadMarker { relayApplyingMarker }

    init(name: String, object: Object, keyPath: ReferenceWritableKeyPath<Object, Value>) {
        self.name = name
        self.object = object
        self.keyPath = keyPath
    }

    /// Starts publishing local changes through `relay`.
    func start(relay: Relay) throws(KVOError) {
        let token = try object?.observe(keyPath, options: .new) { [weak self, weak relay] object, change in
            guard let self, let relay, !Self.applying.isSet(self), change.newValue != nil else { return }
            // What the property holds when the write is stamped is what is
            // sent: a remote value stored since this change (see applyRemote)
            // is then sent as this write, so every instance ends with the
            // value this one holds.
            relay.publishSet(name: self.name) {
                let value = object[keyPath: self.keyPath]
                self.latest = value
                return value
            }
        }
        self.token.withLock { $0 = token }
    }

    func stop() {
        token.withLock { $0.take() }?.invalidate()
    }

    func decodeValue(from decoder: any Decoder) throws -> any Sendable {
        try Value(from: decoder)
    }

    func applyRemote(_ value: any Sendable, stamp: UInt64, from instance: String, relay: Relay) -> RemoteSetResult {
        guard let value = value as? Value else { return .wrongType }
        guard let object else { return .gone }
        guard relay.acceptRemoteWrite(name: name, stamp: stamp, instance: instance, record: { latest = value })
        else { return .stale }
        // The store happens after the write was accepted, outside the lock
        // (observers run inside it). A write accepted or stamped in between
        // is newer: a local one stored before this store was overwritten by
        // it. So the newest write's value is stored again, until no write
        // came in between; a local one stored after that is stamped after,
        // and sends what the property then holds.
        var written = (stamp: stamp, instance: instance, value: value)
        while true {
            Self.applying.with(self) { object[keyPath: keyPath] = written.value }
            guard let newer = relay.write(of: name, after: written.stamp, by: written.instance, latest: { latest })
            else { return .applied }
            written = newer
        }
    }
}

/// One marker for every replication: the mark is the replication itself.
let relayApplyingMarker = ThreadMarker()
#endif

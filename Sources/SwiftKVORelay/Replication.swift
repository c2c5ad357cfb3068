#if Relay
import SwiftKVO
import Synchronization

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
    private let token = Mutex<ObservationToken?>(nil)

    /// Set while a remote value is being assigned (on the assigning thread).
    private static var applying: ThreadMarker { relayApplyingMarker }

    init(name: String, object: Object, keyPath: ReferenceWritableKeyPath<Object, Value>) {
        self.name = name
        self.object = object
        self.keyPath = keyPath
    }

    /// Starts publishing local changes through `relay`.
    func start(relay: Relay) throws(KVOError) {
        let token = try object?.observe(keyPath, options: .new) { [weak self, weak relay] _, change in
            guard let self, let relay, !Self.applying.isSet(self), let value = change.newValue else { return }
            relay.publishSet(name: self.name, value: value)
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
        guard relay.acceptRemoteWrite(name: name, stamp: stamp, instance: instance) else { return .stale }
        Self.applying.with(self) { object[keyPath: keyPath] = value }
        return .applied
    }
}

/// One marker for every replication: the mark is the replication itself.
let relayApplyingMarker = ThreadMarker()
#endif

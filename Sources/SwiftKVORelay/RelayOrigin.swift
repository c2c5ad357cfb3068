#if Relay
import SwiftKVO

/// Where a notification delivered by the hub came from, as far as a relay knows.
///
/// A relay posts every notification it receives from another instance with
/// the relay itself as sender (`object`) and a ``RelayOrigin`` in the user info
/// under ``userInfoKey``; ``Relay/post(name:userInfo:)`` adds ``local`` there.
/// A post made straight through the hub carries neither: read it with
/// ``SwiftKVO/HubNotification/relayOrigin``, which answers ``local`` then.
public enum RelayOrigin: Hashable, Sendable {
    /// Posted in this process.
    case local
    /// Posted by the relay instance `instance` (its
    /// ``RelayConfiguration/instanceID``) in another process or connection.
    case remote(instance: String)

    /// The user-info key under which relays put a notification's origin. It is
    /// never sent over the wire; a user-info entry with this key is not forwarded.
    public static let userInfoKey = "SwiftKVORelay.origin"
}

extension HubNotification {
    /// Where this notification came from: ``RelayOrigin/remote(instance:)`` for
    /// one a relay received from another instance, ``RelayOrigin/local`` otherwise.
    public var relayOrigin: RelayOrigin {
        userInfo[RelayOrigin.userInfoKey] as? RelayOrigin ?? .local
    }
}
#endif

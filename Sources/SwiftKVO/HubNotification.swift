/// A posted notification, as observers receive it.
///
/// Handed to blocks on the posting thread (and through
/// ``NotificationHub/notifications(named:object:bufferingPolicy:)`` to other
/// tasks): `object` is the sender as posted. A notification is one reference
/// to what the post carries, so copying it or keeping it after the block
/// returns is cheap and safe.
public struct HubNotification: @unchecked Sendable {
    @usableFromInline
    let contents: Contents

    @inlinable @inline(__always)
    init(contents: Contents) { self.contents = contents }

    /// The notification's name.
    public var name: NotificationHub.Name { contents.name }
    /// The sender, or `nil`.
    public var object: AnyObject? { contents.object }
    /// The payload.
    public var userInfo: [String: any Sendable] { contents.userInfo }
}

extension HubNotification {
    /// What one post carries. The engine passes it by address and blocks get
    /// it borrowed, so a delivery copies nothing and counts no reference.
    ///
    /// Each thread keeps the contents of its last post and refills them for
    /// the next one, unless a block kept the notification: then that block's
    /// copy owns them and the next post starts new ones. The fields change
    /// only while the posting thread holds the sole reference.
    @usableFromInline
    final class Contents {
        @exclusivity(unchecked) fileprivate(set) var name: NotificationHub.Name
        @exclusivity(unchecked) fileprivate(set) var object: AnyObject?
        @exclusivity(unchecked) fileprivate(set) var userInfo: [String: any Sendable]

        fileprivate init(name: NotificationHub.Name, object: AnyObject?, userInfo: [String: any Sendable]) {
            self.name = name
            self.object = object
            self.userInfo = userInfo
        }
    }

    /// Each thread's contents kept for its next post.
    private final class Spare {
        @exclusivity(unchecked) var contents: Contents?
    }

    private static let spares = ThreadLocal<Spare>()

    /// Calls `announce` with the address of the contents of a post of `name`
    /// (`Unmanaged` opaque form), then lets them go: reused by this thread's
    /// next post unless a block kept a copy. A nested post (from a block)
    /// gets its own contents.
    static func posting(
        name: NotificationHub.Name, object: AnyObject?, userInfo: [String: any Sendable],
        _ announce: (UnsafeRawPointer) -> Void
    ) {
        let spare = spares.unmanagedValue(Spare.init)
        var contents: Contents
        if let reused = spare._withUnsafeGuaranteedRef({ $0.contents.take() }) {
            reused.name = name
            reused.object = object
            reused.userInfo = userInfo
            contents = reused
        } else {
            contents = Contents(name: name, object: object, userInfo: userInfo)
        }
        announce(UnsafeRawPointer(Unmanaged.passUnretained(contents).toOpaque()))
        guard isKnownUniquelyReferenced(&contents) else { return }
        // Kept for the next post, without keeping the sender or the payload alive.
        contents.object = nil
        contents.userInfo = [:]
        spare._withUnsafeGuaranteedRef { $0.contents = contents }
    }
}

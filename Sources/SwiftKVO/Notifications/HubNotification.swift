/// A posted notification, as observers receive it.
///
/// Handed to blocks on the posting thread (and through
/// ``NotificationHub/notifications(named:object:bufferingPolicy:)`` to other
/// tasks): `object` is the sender as posted. A notification is one reference
/// to what the post carries, so copying it or keeping it after the block
/// returns is cheap and safe.
///
/// Reading a property inside a block counts no reference: the block borrows
/// the notification, and the notification's fields are immutable while any
/// reader can reach them, so `note.object` is a load, not a retain of the
/// sender (whose reference count every posting thread shares).
public struct HubNotification: @unchecked Sendable {
    @usableFromInline
    let contents: Contents

    @inlinable @inline(__always)
    init(contents: Contents) { self.contents = contents }

    /// The notification's name.
    @inlinable
    public var name: NotificationHub.Name { contents.fields.name }
    /// The sender, or `nil`.
    @inlinable
    public var object: AnyObject? { contents.fields.object }
    /// The payload.
    @inlinable
    public var userInfo: [String: any Sendable] { contents.fields.userInfo }
}

extension HubNotification {
    /// What one post carries.
    @usableFromInline
    struct Fields {
        @usableFromInline
        let name: NotificationHub.Name
        @usableFromInline
        let object: AnyObject?
        @usableFromInline
        let userInfo: [String: any Sendable]

        init(name: NotificationHub.Name, object: AnyObject?, userInfo: [String: any Sendable]) {
            self.name = name
            self.object = object
            self.userInfo = userInfo
        }
    }

    /// What one post carries, by reference. The engine passes it by address
    /// and blocks get it borrowed, so a delivery copies nothing and counts no
    /// reference: `fields` is a `let`, so a block reading `note.object` borrows
    /// the sender in place instead of retaining it.
    ///
    /// Each thread keeps the contents of its last post and refills them for
    /// the next one, unless a block kept the notification: then that block's
    /// copy owns them and the next post starts new ones. So the fields are
    /// immutable to every reader: they are rewritten in place only by the
    /// posting thread, before and after its post, while it holds the sole
    /// reference — no block, no copy and no other thread can see the change.
    ///
    /// The sender is lent, not retained: the post's caller keeps it alive
    /// until the post returns, and a retain per post would write the sender's
    /// reference count, which every thread posting for that sender shares.
    /// Contents that outlive the post (a block kept them) adopt the sender
    /// (one retain) before the post returns.
    @usableFromInline
    final class Contents {
        @usableFromInline
        let fields: Fields

        fileprivate init(_ fields: Fields) { self.fields = fields }

        /// `fields`, the class's only stored property: it starts where the
        /// stored properties do.
        private var storage: UnsafeMutableRawPointer { _getUnsafePointerToStoredProperties(self) }

        /// Replaces the fields in place, releasing the old ones. Only while
        /// the caller holds the sole reference and no sender is lent; the
        /// caller must not have read `fields` in the same function before.
        fileprivate func refill(_ fields: Fields) {
            storage.assumingMemoryBound(to: Fields.self).pointee = fields
        }

        /// Points the sender field, `nil` until now, at `object` without
        /// retaining it. Only while the caller holds the sole reference.
        fileprivate func lend(_ object: AnyObject?) {
            guard let object else { return }
            storage.storeBytes(
                of: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()),
                toByteOffset: Self.objectOffset, as: UInt.self)
        }

        /// Clears the lent sender without releasing it (it was never retained).
        /// Only while the caller holds the sole reference again.
        fileprivate func endLoan() {
            storage.storeBytes(of: 0, toByteOffset: Self.objectOffset, as: UInt.self)
        }

        /// Makes the lent `object` the field's own (one retain), for contents
        /// that outlive the post; their deinit releases it as usual. Called
        /// while the post's caller still keeps `object` alive.
        fileprivate func adoptLoan(_ object: AnyObject?) {
            guard let object else { return }
            _ = Unmanaged.passUnretained(object).retain()
        }

        /// Where the sender field is in `fields` (a constant the optimizer folds).
        private static var objectOffset: Int { MemoryLayout<Fields>.offset(of: \.object).unsafelyUnwrapped }
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
        let fields = Fields(name: name, object: nil, userInfo: userInfo)
        var contents: Contents
        if let reused = spare._withUnsafeGuaranteedRef({ $0.contents.take() }) {
            reused.refill(fields)
            contents = reused
        } else {
            contents = Contents(fields)
        }
        contents.lend(object)
        announce(UnsafeRawPointer(Unmanaged.passUnretained(contents).toOpaque()))
        guard isKnownUniquelyReferenced(&contents) else {
            // A block kept the notification: the contents are its copy's now.
            contents.adoptLoan(object)
            return
        }
        contents.endLoan()
        // Kept for the next post, without keeping the payload alive.
        contents.refill(Fields(name: name, object: nil, userInfo: [:]))
        spare._withUnsafeGuaranteedRef { $0.contents = contents }
    }
}

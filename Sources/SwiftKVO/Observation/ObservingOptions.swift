/// What an observation asks for; combine with set-literal syntax (`[.old, .new]`).
///
/// The bits are those of CKVOCore's `ckvo_options_t`, defined once in `ckvo.h`.
public struct ObservingOptions: OptionSet, Hashable, Sendable {
    /// The option bits (CKVOCore's `CKVO_OPTION_*`).
    public let rawValue: UInt32

    /// Creates options from raw bits.
    @inlinable
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The change carries the new value (never in a prior notification, never for removals).
    @inlinable
    public static var new: ObservingOptions { ObservingOptions(rawValue: 1 << 0) }

    /// The change carries the old value (never for insertions, never in the initial notification).
    @inlinable
    public static var old: ObservingOptions { ObservingOptions(rawValue: 1 << 1) }

    /// One notification is delivered synchronously during registration, after the
    /// observation is installed, with kind ``ChangeKind/setting`` and the current value
    /// (read after installation) as new value when `.new` is also given.
    @inlinable
    public static var initial: ObservingOptions { ObservingOptions(rawValue: 1 << 2) }

    /// An extra notification before each change (``ObservedChange/isPrior`` is `true`),
    /// carrying the old value (with `.old`) and indexes, never the new value.
    @inlinable
    public static var prior: ObservingOptions { ObservingOptions(rawValue: 1 << 3) }
}

/// An error reported by SwiftKVO: a CKVOCore status, or a condition only the
/// Swift layer can detect.
///
/// Like swift-system's `Errno`, each static member names the C status it
/// mirrors, and `rawValue` is that status. Compare with `==` or use it in a
/// `switch` / `catch` pattern:
///
/// ```swift
/// do { try token.invalidateAndWait() }
/// catch .wouldDeadlock { token.invalidate() }   // called from inside a callback
/// ```
public struct KVOError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The CKVOCore status (`ckvo_status_t`, negative), or a positive Swift-only code.
    public let rawValue: Int32

    /// What SwiftKVO can say about where the error arose, beyond its kind: for
    /// a refused key path, the part that is not observable and why. Not part
    /// of equality: `error == .unsupportedKeyPath` holds whatever the detail.
    public let detail: String?

    /// Creates an error from a raw status.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
        self.detail = nil
    }

    /// `error` with `detail` attached.
    init(_ error: KVOError, detail: String) {
        self.rawValue = error.rawValue
        self.detail = detail
    }

    public static func == (lhs: KVOError, rhs: KVOError) -> Bool { lhs.rawValue == rhs.rawValue }

    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    /// An argument was invalid. Mirrors `CKVO_EINVAL`.
    public static var invalidArgument: KVOError { KVOError(rawValue: Engine.Status.invalidArgument) }

    /// No such observation: unknown, stale or already removed. Mirrors `CKVO_ENOENT`.
    public static var notFound: KVOError { KVOError(rawValue: Engine.Status.notFound) }

    /// The same observation is already registered. Mirrors `CKVO_EEXIST`.
    public static var alreadyObserving: KVOError { KVOError(rawValue: Engine.Status.alreadyObserving) }

    /// The engine ran out of memory. Mirrors `CKVO_ENOMEM`.
    public static var outOfMemory: KVOError { KVOError(rawValue: Engine.Status.outOfMemory) }

    /// A call that waits for running callbacks was made from inside a callback,
    /// where it would wait for itself. Nothing was done. Mirrors `CKVO_EDEADLK`.
    public static var wouldDeadlock: KVOError { KVOError(rawValue: Engine.Status.wouldDeadlock) }

    /// Notifications nested deeper than the engine's per-thread limit (a
    /// callback that keeps changing what it observes); the change was not
    /// delivered. Mirrors `CKVO_ELOOP`.
    public static var nestingLimit: KVOError { KVOError(rawValue: Engine.Status.nestingLimit) }

    /// The key path does not name something SwiftKVO can observe: it must end
    /// in an `@Observed`/`@ObservedArray` property, a declared dependent key,
    /// or a chain of `@Observed` properties. Swift only (no C status).
    public static var unsupportedKeyPath: KVOError { KVOError(rawValue: 1001) }

    /// The key path force-unwraps a link (`\.account!.name`), which would
    /// trap whenever the link is nil. Observe the optional chain instead
    /// (`\.account?.name`): it follows the link while it is non-nil and
    /// delivers `nil` while it is not. Swift only (no C status).
    public static var forceUnwrappedKeyPath: KVOError { KVOError(rawValue: 1002) }

    /// The key path is a dependent key computed, through other dependent
    /// keys declared in ``KeyValueObservable/dependentKeyPaths``, from
    /// itself. Swift only (no C status).
    public static var dependencyCycle: KVOError { KVOError(rawValue: 1003) }

    /// A target-action names a method isolated to a global actor other than
    /// the main actor. SwiftKVO cannot deliver to it on its actor, and calling
    /// it on the changing thread would run it off its actor, so the
    /// registration is refused: nothing is observed and the action is never
    /// called. Observe with a block and hop to the actor inside it. Swift only
    /// (no C status). See <doc:ThreadingAndIsolation>.
    public static var isolatedAction: KVOError { KVOError(rawValue: 1004) }

    /// The engine's message for the status (`ckvo_strerror`), or the Swift-only message.
    /// A key reached by name is not in the class's table of keys by name
    /// (``KeyValueObservable/observableKeyPaths``), as Apple KVO's
    /// `NSUndefinedKeyException`. Nothing was read, changed or registered.
    public static var unknownKey: KVOError { KVOError(rawValue: 1005) }

    /// A value given by name is not of the key's type (or `nil` for a key
    /// that is not optional). Nothing was changed.
    public static var typeMismatch: KVOError { KVOError(rawValue: 1006) }

    public var description: String {
        guard let detail else { return kindDescription }
        return "\(kindDescription): \(detail)"
    }

    private var kindDescription: String {
        switch rawValue {
        case 1001:
            return "not an observable key path (an @Observed or @ObservedArray property, "
                + "a declared dependent key, or a chain of @Observed properties)"
        case 1002: return "a force-unwrapped key path (!) would trap on nil: observe it with ?. instead"
        case 1003: return "the dependent key is computed from itself (a dependency cycle)"
        case 1004: return "a target-action isolated to a global actor other than the main actor"
        case 1005: return "no observable key of that name"
        case 1006: return "a value of another type than the key's"
        default: return Engine.message(for: rawValue)
        }
    }

    /// Pattern matching in `catch` clauses: `catch KVOError.notFound`.
    public static func ~= (pattern: KVOError, value: any Error) -> Bool {
        (value as? KVOError) == pattern
    }
}

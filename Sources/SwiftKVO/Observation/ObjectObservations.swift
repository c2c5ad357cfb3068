// What is observed on one object, asked of the engine (SPEC §2.20). The engine lists an object's
// live observations lock-free, inside its read section, where an observation's box cannot be
// released; the box says who registered it.

/// One observation registered on an object, as
/// ``KeyValueObservable/observations`` lists it.
public struct ObservationSummary: Hashable, Sendable, CustomStringConvertible {
    /// Who registered an observation.
    public enum Observer: Hashable, Sendable, CustomStringConvertible {
        /// An ``ObservationToken``: `observe(_:options:changeHandler:)`, by
        /// key path or by name, and the async sequences `values(for:)` and
        /// `changes(for:)`.
        case token
        /// A ``KVOController``.
        case controller
        /// A link of a key path chain (`\.account.name` observed on a folder
        /// is listed as `account` on the folder and `name` on its account).
        case chain
        /// A ``NotificationHub`` registration with this object as its sender.
        case hub

        public var description: String {
            switch self {
            case .token: "token"
            case .controller: "controller"
            case .chain: "chain"
            case .hub: "hub"
            }
        }
    }

    /// The observed key: a property's name (`balance`), a dependent key's
    /// (`fullName`, or its key path where no name table names it), or a
    /// notification's name.
    public let key: String
    /// Whether ``key`` is a dependent key (``KeyValueObservable/dependentKeyPaths``).
    public let isDependentKey: Bool
    /// The options the observation was registered with (a chain's inner
    /// links observe with `.prior`; its last link with the user's options).
    public let options: ObservingOptions
    /// Who registered it.
    public let observer: Observer

    public var description: String {
        let named: [(ObservingOptions, String)] = [(.new, "new"), (.old, "old"), (.initial, "initial"), (.prior, "prior")]
        let listed = named.filter { options.contains($0.0) }.map(\.1).joined(separator: ", ")
        return "\(key)\(isDependentKey ? " (dependent)" : "") [\(listed)] by \(observer)"
    }
}

extension KeyValueObservable {
    /// The observations registered on this object now, in registration order
    /// per key.
    ///
    /// A snapshot: an observation added or removed on another thread while it
    /// is taken may or may not appear. Thread safety: any thread, also inside
    /// a callback. Cost: one lookup per key observed on some object plus
    /// O(observations of this object), read lock-free like a notification
    /// (it never blocks or delays one), and the array; key names are looked
    /// up in a table filled when each key is first used.
    public var observations: [ObservationSummary] {
        Engine.observations(of: Engine.address(self)).compactMap(EngineKeyDescriptions.summary)
    }
}

/// What the Swift layer's engine keys are called, filed where each is interned.
enum EngineKeyDescriptions {
    private struct Description {
        let name: String
        let isDependentKey: Bool
    }

    private static let descriptions = LockedState([EngineKey: Description]())

    /// Files `key` as the property, dependent key or notification named `name`.
    static func file(_ key: EngineKey, name: String, isDependentKey: Bool = false) {
        guard key != 0 else { return }
        descriptions.withLock { $0[key] = Description(name: name, isDependentKey: isDependentKey) }
    }

    /// `observation` as ``KeyValueObservable/observations`` lists it; `nil`
    /// for an observation the Swift layer did not register.
    static func summary(_ observation: Engine.ListedObservation) -> ObservationSummary? {
        guard let observer = observation.observer else { return nil }
        let description = descriptions.withLock { $0[observation.key] }
        return ObservationSummary(
            key: description?.name ?? Engine.keyName(observation.key),
            isDependentKey: description?.isDependentKey ?? false,
            options: observation.options, observer: observer)
    }
}

#if Relay
/// Where a replicated property's remote writes are applied: under the
/// synchronization the service already uses for the object
/// (``Relay/replicate(_:of:as:merging:isolation:)``).
///
/// Remote values, loaded values and writes held for a load are all stored
/// through it, so they never race the service's own access to the object:
///
/// ```swift
/// // The object is guarded by a lock: remote writes take it too.
/// try relay.replicate(\.counts, of: inventory, as: "inventory.counts", merging: .counterPerKey(),
///                     isolation: .lock { apply in inventory.lock.withLock { apply() } })
///
/// // The object belongs to an actor: remote writes run on its executor.
/// try relay.replicate(\.price, of: store.model, as: "store.price", isolation: .actor(store))
/// ```
public struct ReplicationIsolation: Sendable, CustomStringConvertible {
    enum Kind {
        case relayTask
        case lock(@Sendable (_ apply: () -> Void) -> Void)
        case actor(any Actor)
    }

    let kind: Kind

    /// On the task running ``Relay/run()``, with no lock: the object must
    /// then not be written by other threads without synchronization of
    /// their own, as for any `@Observed` property. The default.
    public static let relayTask = Self(kind: .relayTask)

    /// Under the service's lock: `withLock` must call `apply` exactly once,
    /// synchronously, holding the lock that guards the object. The relay
    /// calls it from its own task; `apply` runs the observers of the change,
    /// so they run under that lock as they do for the service's own writes.
    public static func lock(_ withLock: @escaping @Sendable (_ apply: () -> Void) -> Void) -> Self {
        Self(kind: .lock(withLock))
    }

    /// On `actor`'s executor: for an object only touched by that actor. The
    /// relay awaits each write there, in order.
    public static func actor(_ actor: any Actor) -> Self {
        Self(kind: .actor(actor))
    }

    /// On the main actor: for `@MainActor` models.
    public static var mainActor: Self { .actor(MainActor.shared) }

    public var description: String {
        switch kind {
        case .relayTask: "relayTask"
        case .lock: "lock"
        case .actor(let actor): "actor(\(type(of: actor)))"
        }
    }

    /// Runs `body` here when that needs no await; returns `false` (and runs
    /// nothing) for an actor.
    func runSynchronously(_ body: () -> Void) -> Bool {
        switch kind {
        case .relayTask:
            body()
            return true
        case .lock(let withLock):
            withLock(body)
            return true
        case .actor:
            return false
        }
    }

    /// Runs `body` here, awaiting the actor if there is one.
    func run(_ body: @Sendable () -> Void) async {
        if case .actor(let actor) = kind {
            await Self.run(body, on: actor)
        } else {
            _ = runSynchronously(body)
        }
    }

    private static func run(_ body: @Sendable () -> Void, on actor: isolated any Actor) {
        body()
    }
}
#endif

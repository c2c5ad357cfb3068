/// What the observation engine holds, process-wide (SPEC §2 item 20): a
/// snapshot for logs, health endpoints and metrics.
///
/// ```swift
/// let stats = EngineStatistics.current
/// print(stats.observations, stats.pendingReleases)
/// ```
public struct EngineStatistics: Hashable, Sendable, CustomStringConvertible {
    /// Observations registered and not yet removed (tokens, controller
    /// entries, chain links, hub registrations: each engine registration).
    public let observations: Int
    /// Interned keys (one per observable property, dependent key and
    /// notification name seen).
    public let keys: Int
    /// Observations removed whose handlers wait for a grace period before
    /// they are released.
    public let pendingReleases: Int
    /// Bytes the engine holds for the hub, exactly as asked of the allocator:
    /// every block of its structures (token pages, slots, observer lists,
    /// index tables, owner groups, keys and their names, the hub itself).
    /// Not counted: the Swift boxes of observations, per-thread reader
    /// records, and memory retired and waiting for a grace period. After
    /// removals and a flush it falls back to a small multiple of what is live
    /// (see docs/reliability.md).
    public let bytesHeld: Int

    /// The engine's counts now.
    ///
    /// Reading takes the engine's writer lock for a moment, which registration
    /// and removal take too, but never notification: dispatch does not wait
    /// for it. O(1).
    public static var current: EngineStatistics {
        let stats = Engine.stats()
        return EngineStatistics(
            observations: stats.observations, keys: stats.keys, pendingReleases: stats.pendingReleases,
            bytesHeld: stats.bytes)
    }

    public var description: String {
        "EngineStatistics(observations: \(observations), keys: \(keys), pendingReleases: \(pendingReleases), "
            + "bytesHeld: \(bytesHeld))"
    }
}

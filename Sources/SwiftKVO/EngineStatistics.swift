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
    /// Bytes the engine holds in its own structures: token pages and their
    /// directory, index tables beyond their initial few kilobytes, the hub.
    /// Not counted: observer lists, slots and key names (tens of bytes per
    /// observation), the Swift boxes of observations, and memory retired
    /// and waiting for a grace period. After removals and a flush it falls
    /// back to a small multiple of what is live (see docs/reliability.md).
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

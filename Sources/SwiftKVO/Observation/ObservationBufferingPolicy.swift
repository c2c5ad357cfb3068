/// How many undelivered elements an observation's async sequence keeps for a
/// consumer that has not asked for them yet, and which it drops beyond that.
///
/// The spellings are `AsyncStream`'s. Each sequence states its default:
/// ``KeyValueObservable/values(for:bufferingPolicy:)`` keeps the newest value
/// (`.bufferingNewest(1)`: a later whole value supersedes an earlier one),
/// ``KeyValueObservable/changes(for:options:bufferingPolicy:)`` and
/// ``NotificationHub/notifications(named:object:bufferingPolicy:)`` the newest
/// 1,000 elements (`.bufferingNewest(1_000)`).
public struct ObservationBufferingPolicy: Hashable, Sendable, CustomStringConvertible {
    enum Limit: Hashable {
        case unbounded
        case oldest(Int)
        case newest(Int)
    }

    let limit: Limit

    /// Keeps every element: memory grows as long as the consumer lags.
    public static var unbounded: Self { Self(limit: .unbounded) }

    /// Keeps the first `limit` undelivered elements and drops each newer
    /// one while that many wait. A limit below 0 is taken as 0 (nothing is
    /// kept: only a consumer already waiting receives an element).
    public static func bufferingOldest(_ limit: Int) -> Self { Self(limit: .oldest(max(limit, 0))) }

    /// Keeps the newest `limit` undelivered elements: a new element pushes
    /// out the oldest waiting one when that many wait. A limit below 0 is
    /// taken as 0 (nothing is kept: only a consumer already waiting
    /// receives an element).
    public static func bufferingNewest(_ limit: Int) -> Self { Self(limit: .newest(max(limit, 0))) }

    /// The policy as it is spelled.
    public var description: String {
        switch limit {
        case .unbounded: ".unbounded"
        case .oldest(let count): ".bufferingOldest(\(count))"
        case .newest(let count): ".bufferingNewest(\(count))"
        }
    }
}

#if Relay
import Logging

/// At most one warning of each kind per interval, whatever the number of
/// instances or messages behind them: what a client of the database sends
/// can never flood the log. A kind is the warning's message. The warnings
/// held back are counted, and the next one of the kind says how many
/// (metadata `suppressed`).
struct WarningLimiter {
    let interval: Duration
    private var kinds: [String: (last: ContinuousClock.Instant, suppressed: Int)] = [:]

    init(interval: Duration) {
        self.interval = interval
    }

    /// Whether a warning of `kind` may be logged `now`, and if so how many
    /// were held back since the last one; nil if it is held back.
    mutating func admit(_ kind: String, now: ContinuousClock.Instant) -> Int? {
        if let (last, suppressed) = kinds[kind] {
            guard now - last >= interval else {
                kinds[kind] = (last, suppressed.addingSaturating(1))
                return nil
            }
            kinds[kind] = (now, 0)
            return suppressed
        }
        kinds[kind] = (now, 0)
        return 0
    }
}

extension Relay {
    /// The shortest time between two warnings of one kind.
    static let warningInterval = Duration.seconds(1)

    /// Logs `message` as a warning unless one of its kind was logged within
    /// ``warningInterval`` (then it is counted, and the next one says so).
    /// Every value of `metadata` that came from the wire must be escaped
    /// (`Wire.loggable`) by the caller.
    func warn(_ message: String, metadata: Logger.Metadata) {
        guard let suppressed = state.withLock({ $0.warnings.admit(message, now: .now) }) else { return }
        var metadata = metadata
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        configuration.logger.warning("\(message)", metadata: metadata)
    }
}
#endif

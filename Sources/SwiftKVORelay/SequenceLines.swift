#if Relay
/// What a relay knows of one other instance's messages: which it has seen,
/// by their place in the sender's sequence — never by when they were sent or
/// read.
///
/// A message is identified by (instance, incarnation, sequence number). Per
/// instance the relay keeps up to ``capacity`` *lines*: an incarnation and
/// the range of sequence numbers heard on it. Usually there is one; a
/// restart adds a line of the new incarnation, and a jump beyond
/// ``RelayConfiguration/maximumSequenceJump`` a second line of the same one.
/// The rules (``judge(incarnation:sequence:validated:bound:tolerance:plausible:mayStartLine:)``):
///
/// - **Duplicates.** A sequence number at or below the highest heard of its
///   incarnation is a copy of a message already seen (or passed over), however
///   far back: dropped. The one exception is a number that continues a lower
///   line of the same incarnation within the bound: the sender going on after
///   someone forged a jump ahead of it.
/// - **Gaps.** A number above the highest by at most the bound is new; the
///   numbers skipped are reported missed.
/// - **Restarts.** A new incarnation starts a new line, and is reported as a
///   restart, if it is not older than the latest line's by the sender's own
///   ordering: incarnations are made from the sender's start time
///   (``Incarnation``), so one more than `tolerance` milliseconds older is a
///   replay of an earlier run, dropped. Older by less is a restart on a host
///   whose clock is behind (within the allowed skew): accepted. Incarnations
///   whose start time is not `plausible` — made by relays of earlier versions,
///   which were random, or forged far ahead — are not ordered: a new one
///   after such is a restart, so neither an upgrade nor a forged incarnation
///   at the end of time makes later restarts look older.
/// - **Superseded incarnations.** Once a line of another incarnation started
///   after an incarnation was last heard, that incarnation is superseded: its
///   messages are dropped as replays — except one that directly follows the
///   highest heard on it. That is the instance still sending, so the newer
///   line was forged (or two relays share the id): it is delivered, and the
///   conflict reported, so a forged incarnation can never silence a live
///   one unnoticed. (A replay cannot pass as that message: a copy of it was
///   seen, or it is the message that was not, delivered late.)
///
/// Bounded and O(``capacity`` + ``retiredCapacity``) per message. When a line
/// is forgotten to make room (one of an incarnation that is not plausible
/// first, else the oldest incarnation's, its lowest line), its numbers stay
/// covered by the lines left of the same incarnation, or its incarnation is
/// retired with the highest number heard: the last ``retiredCapacity``
/// exactly — a message of one is a duplicate at or below that number, a
/// replay above it, except the one directly after it, which takes the
/// incarnation back as a line and is reported as a conflict (so lines forged
/// to crowd out an instance's do not silence it either) — and earlier ones as
/// a floor at or below which every incarnation of the same region of start
/// times (before, within or after the plausible ones) is taken for a replay.
struct SequenceLines {
    struct Line {
        var incarnation: UInt64
        var low: UInt64
        var high: UInt64
        /// When the line started and when it was last heard, in ``tick``s.
        var started: UInt64
        var heard: UInt64
    }

    static let capacity = 4
    static let retiredCapacity = 8

    private(set) var lines: [Line]
    private(set) var retired: [(incarnation: UInt64, high: UInt64)] = []
    /// Per region of start times — before, within and after the plausible
    /// ones (``Incarnation/plausible(wallClockMilliseconds:skew:)``) — the
    /// greatest incarnation that fell out of `retired`, if any: incarnations
    /// are ordered only within a region.
    private(set) var floors: [Incarnation.Region: UInt64] = [:]
    /// Counts the messages judged: orders starts and hearings.
    private var tick: UInt64 = 1

    /// What to do with one message.
    enum Verdict: Equatable {
        /// New: deliver it. `missed`: numbers skipped since the highest heard
        /// on its line; `restarted`: it started a line (a new incarnation or
        /// a jump); `conflict`: it continued a superseded incarnation.
        case accepted(missed: UInt64, restarted: Bool, conflict: Bool)
        /// At or below the highest heard of its incarnation.
        case duplicate
        /// Of a superseded, retired or older incarnation: a replay.
        case replayed
        /// Would start a line, but the message did not validate entirely.
        case ignored
        /// Would start a line, but `mayStartLine` refused (a signed message
        /// sent before what the relay forgot of other instances).
        case refused
    }

    /// The lines of an instance first heard with `incarnation` and `sequence`.
    init(incarnation: UInt64, sequence: UInt64) {
        lines = [Line(incarnation: incarnation, low: sequence, high: sequence, started: 0, heard: 0)]
    }

    /// Judges a message of `incarnation` numbered `sequence`, and records it if new.
    ///
    /// - Parameters:
    ///   - validated: Whether the whole message validated; only such a
    ///     message may start a line.
    ///   - bound: ``RelayConfiguration/maximumSequenceJump``.
    ///   - tolerance: How much older (in ``Incarnation`` milliseconds) a new
    ///     incarnation may be than the latest line's and still be a restart.
    ///   - plausible: The start times a relay of this version can have made
    ///     (asked only for a new incarnation): others are not ordered.
    ///   - mayStartLine: Asked before a line of a new incarnation starts.
    mutating func judge(
        incarnation: UInt64, sequence: UInt64, validated: Bool, bound: UInt64, tolerance: UInt64,
        plausible: () -> ClosedRange<UInt64>, mayStartLine: () -> Bool
    ) -> Verdict {
        tick &+= 1
        // The incarnation's highest line and when it was last heard (no
        // allocation: this runs for every message).
        var top = -1
        var lastHeard: UInt64 = 0
        for index in lines.indices where lines[index].incarnation == incarnation {
            if top < 0 || lines[index].high > lines[top].high { top = index }
            lastHeard = max(lastHeard, lines[index].heard)
        }
        guard top >= 0 else {
            if let index = retired.firstIndex(where: { $0.incarnation == incarnation }) {
                let high = retired[index].high
                guard sequence > high else { return .duplicate }
                guard validated else { return .ignored }
                retired[index].high = sequence
                guard sequence == high + 1 else { return .replayed }
                // Alive after all: back as a line, not as the latest started.
                retired.remove(at: index)
                let line = Line(incarnation: incarnation, low: sequence, high: sequence, started: 0, heard: tick)
                start(line, plausible())
                return .accepted(missed: 0, restarted: false, conflict: true)
            }
            let range = plausible()
            let started = Incarnation.milliseconds(incarnation)
            let region = Incarnation.Region(incarnation, plausible: range)
            if let floor = floors[region], incarnation <= floor { return .replayed }
            if region == .within {
                if let latest = lines.max(by: { $0.started < $1.started }),
                    case let latestStart = Incarnation.milliseconds(latest.incarnation), range.contains(latestStart),
                    started &+ min(tolerance, .max - started) < latestStart
                {
                    return .replayed
                }
            }
            guard validated else { return .ignored }
            guard mayStartLine() else { return .refused }
            start(Line(incarnation: incarnation, low: sequence, high: sequence, started: tick, heard: tick), range)
            return .accepted(missed: 0, restarted: true, conflict: false)
        }
        let highest = lines[top].high
        if lines.contains(where: { $0.incarnation != incarnation && $0.started > lastHeard }) {
            // Superseded: only the message right after the highest is a sign of life.
            guard sequence > highest else { return .duplicate }
            lines[top].high = sequence
            guard sequence == highest + 1 else { return .replayed }
            lines[top].heard = tick
            return .accepted(missed: 0, restarted: false, conflict: true)
        }
        // The line this continues: the highest below it, if it is within the
        // bound and no other line of the incarnation starts in between.
        var below = -1
        for index in lines.indices where lines[index].incarnation == incarnation && lines[index].high < sequence {
            if below < 0 || lines[index].high > lines[below].high { below = index }
        }
        if below >= 0, sequence - lines[below].high <= bound {
            let from = lines[below].high
            if !lines.contains(where: { $0.incarnation == incarnation && $0.low > from && $0.low <= sequence }) {
                lines[below].high = sequence
                lines[below].heard = tick
                return .accepted(missed: sequence - from - 1, restarted: false, conflict: false)
            }
        }
        if sequence <= highest { return .duplicate }
        // Beyond every line of the incarnation by more than the bound.
        guard validated else { return .ignored }
        start(Line(incarnation: incarnation, low: sequence, high: sequence, started: tick, heard: tick), plausible())
        return .accepted(missed: 0, restarted: true, conflict: false)
    }

    /// Adds `line`, first forgetting the oldest incarnation's lowest line if
    /// full (`plausible`: as for ``judge(incarnation:sequence:validated:bound:tolerance:plausible:mayStartLine:)``).
    private mutating func start(_ line: Line, _ plausible: ClosedRange<UInt64>) {
        if lines.count >= Self.capacity {
            func order(_ line: Line) -> (Int, UInt64, UInt64, UInt64) {
                let within = Incarnation.Region(line.incarnation, plausible: plausible) == .within
                return (within ? 1 : 0, Incarnation.milliseconds(line.incarnation), line.incarnation, line.low)
            }
            let oldest = lines.indices.min { order(lines[$0]) < order(lines[$1]) }!
            let forgotten = lines.remove(at: oldest)
            if !lines.contains(where: { $0.incarnation == forgotten.incarnation }) {
                if retired.count >= Self.retiredCapacity {
                    let fallen = retired.removeFirst().incarnation
                    let region = Incarnation.Region(fallen, plausible: plausible)
                    floors[region] = max(floors[region] ?? fallen, fallen)
                }
                retired.append((forgotten.incarnation, forgotten.high))
            }
        }
        lines.append(line)
    }
}

/// A relay's incarnation: its start time in wall-clock milliseconds in the
/// high 42 bits, random in the low 22. So an instance restarted with the same
/// ``RelayConfiguration/instanceID`` gets a greater one (unless its clock went
/// back), two relays started in the same millisecond almost surely differ,
/// and a receiver can order incarnations of one instance by their start.
enum Incarnation {
    static let randomBits: UInt64 = 22

    /// A new incarnation for a relay starting at `wallClockMilliseconds`.
    static func make(wallClockMilliseconds: UInt64) -> UInt64 {
        let time = min(wallClockMilliseconds, .max >> randomBits)
        return max(1, time << randomBits | UInt64.random(in: 0..<(1 << randomBits)))
    }

    /// The start time `incarnation` carries (meaningless for one made otherwise).
    static func milliseconds(_ incarnation: UInt64) -> UInt64 { incarnation >> randomBits }

    /// Where an incarnation's start time lies from the plausible ones.
    enum Region: Hashable {
        case before, within, after

        init(_ incarnation: UInt64, plausible: ClosedRange<UInt64>) {
            let started = milliseconds(incarnation)
            self = started < plausible.lowerBound ? .before : started > plausible.upperBound ? .after : .within
        }
    }

    /// 2020-01-01, before any relay made incarnations this way.
    static let earliest: UInt64 = 1_577_836_800_000

    /// The start times a relay making incarnations this way can have, seen
    /// from a clock at `wallClockMilliseconds` with `skew` allowed: from
    /// ``earliest`` to the clock plus the skew. (Relays of earlier versions
    /// made random incarnations, nearly all outside.)
    static func plausible(wallClockMilliseconds now: UInt64, skew: UInt64) -> ClosedRange<UInt64> {
        let (latest, overflow) = now.addingReportingOverflow(skew)
        return earliest...max(earliest, overflow ? .max : latest)
    }
}
#endif

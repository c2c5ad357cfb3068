#if Relay
import Logging
import Testing

@testable import SwiftKVORelay

/// Replay protection by sequence, without a server (issue #35): what a relay
/// decides from (instance, incarnation, sequence number) alone.
struct SequenceLinesTests {
    static let bound: UInt64 = 16
    /// Twice the default clock skew, in milliseconds.
    static let tolerance: UInt64 = 60_000
    static let now: UInt64 = 1_764_000_000_000

    static func incarnation(_ milliseconds: UInt64) -> UInt64 {
        Incarnation.make(wallClockMilliseconds: milliseconds)
    }

    static func judge(
        _ lines: inout SequenceLines, _ incarnation: UInt64, _ sequence: UInt64, validated: Bool = true,
        mayStartLine: Bool = true
    ) -> SequenceLines.Verdict {
        lines.judge(
            incarnation: incarnation, sequence: sequence, validated: validated, bound: bound, tolerance: tolerance,
            plausible: { Incarnation.plausible(wallClockMilliseconds: now, skew: tolerance / 2) },
            mayStartLine: { mayStartLine })
    }

    static let new = SequenceLines.Verdict.accepted(missed: 0, restarted: false, conflict: false)
    static let restart = SequenceLines.Verdict.accepted(missed: 0, restarted: true, conflict: false)

    @Test func aCopyOfASeenMessageIsADuplicateHoweverFarBack() {
        let a = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: a, sequence: 1)
        for sequence in 2...66_000 as ClosedRange<UInt64> { #expect(Self.judge(&lines, a, sequence) == Self.new) }
        for sequence in [1, 2, Self.bound, 65_999 - Self.bound, 65_999, 66_000] as [UInt64] {
            #expect(Self.judge(&lines, a, sequence) == .duplicate, "\(sequence)")
        }
        #expect(Self.judge(&lines, a, 66_001) == Self.new)
    }

    @Test func aGapIsCountedAndAJumpBeyondTheBoundIsARestart() {
        let a = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: a, sequence: 1)
        let gap = SequenceLines.Verdict.accepted(missed: Self.bound - 1, restarted: false, conflict: false)
        #expect(Self.judge(&lines, a, 1 + Self.bound) == gap)
        // A jump beyond the bound starts a line, only from a message that validated.
        #expect(Self.judge(&lines, a, 1_000, validated: false) == .ignored)
        #expect(Self.judge(&lines, a, 1_000) == Self.restart)
        #expect(Self.judge(&lines, a, 1_001) == Self.new)
        #expect(Self.judge(&lines, a, 500) == .duplicate)
    }

    @Test func theSenderGoesOnBelowAForgedJumpAndCopiesOfEitherLineAreDuplicates() {
        let a = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: a, sequence: 1)
        #expect(Self.judge(&lines, a, 1_000_000_000_001) == Self.restart)  // forged
        for sequence in 2...5 as ClosedRange<UInt64> { #expect(Self.judge(&lines, a, sequence) == Self.new) }
        #expect(Self.judge(&lines, a, 3) == .duplicate)
        #expect(Self.judge(&lines, a, 1_000_000_000_001) == .duplicate)
    }

    @Test func aNewerIncarnationIsARestartAndACopyOfTheEarlierOnesIsThenAReplay() {
        let first = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: first, sequence: 1)
        for sequence in 2...10 as ClosedRange<UInt64> { _ = Self.judge(&lines, first, sequence) }
        let second = Self.incarnation(Self.now + 5_000)
        #expect(Self.judge(&lines, second, 1) == Self.restart)
        #expect(Self.judge(&lines, second, 2) == Self.new)
        #expect(Self.judge(&lines, first, 3) == .duplicate)  // a copy
        #expect(Self.judge(&lines, first, 20) == .replayed)  // not the next one: not a sign of life
        #expect(Self.judge(&lines, second, 3) == Self.new)
    }

    @Test func anIncarnationOlderThanTheSkewAllowsIsAReplay() {
        let current = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: current, sequence: 1)
        let older = Self.incarnation(Self.now - Self.tolerance - 1)
        #expect(Self.judge(&lines, older, 1) == .replayed)
        #expect(Self.judge(&lines, current, 2) == Self.new)
    }

    /// Item 3: a restart on a host whose clock is 20 s behind.
    @Test func aRestartOnAHostWhoseClockIsBehindWithinTheSkewIsARestart() {
        let first = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: first, sequence: 1)
        _ = Self.judge(&lines, first, 2)
        let behind = Self.incarnation(Self.now - 20_000)
        #expect(Self.judge(&lines, behind, 1) == Self.restart)
        for sequence in 2...5 as ClosedRange<UInt64> { #expect(Self.judge(&lines, behind, sequence) == Self.new) }
    }

    /// Item 2: one forged message of a newer incarnation.
    @Test func aLiveInstanceGoesOnAfterAForgedNewerIncarnationAndTheConflictIsReported() {
        let real = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: real, sequence: 1)
        _ = Self.judge(&lines, real, 2)
        let forged = Self.incarnation(Self.now + 29_000)
        #expect(Self.judge(&lines, forged, 1) == Self.restart)
        #expect(Self.judge(&lines, real, 3) == .accepted(missed: 0, restarted: false, conflict: true))
        for sequence in 4...30 as ClosedRange<UInt64> { #expect(Self.judge(&lines, real, sequence) == Self.new) }
        #expect(Self.judge(&lines, real, 2) == .duplicate)
    }

    @Test func incarnationsOfEarlierVersionsOrForgedFarAheadAreNotOrdered() {
        // Relays of earlier versions made random incarnations: a restart is a restart.
        let random: UInt64 = 0xF000_0000_0000_0001  // a start time in the next century
        var lines = SequenceLines(incarnation: random, sequence: 1)
        let upgraded = Self.incarnation(Self.now)
        #expect(Self.judge(&lines, upgraded, 1) == Self.restart)
        let before2020: UInt64 = 12_345
        #expect(Self.judge(&lines, before2020, 1) == Self.restart)
        // One forged at the end of time does not make the next restart older.
        let forged = UInt64.max
        #expect(Self.judge(&lines, forged, 1) == Self.restart)
        #expect(Self.judge(&lines, Self.incarnation(Self.now + 1_000), 1) == Self.restart)
        // Between plausible incarnations, the order holds.
        #expect(Self.judge(&lines, Self.incarnation(Self.now - Self.tolerance - 1), 1) == .replayed)
    }

    @Test func linesForgedToCrowdOutAnInstanceDoNotSilenceIt() {
        let real = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: real, sequence: 1)
        _ = Self.judge(&lines, real, 2)
        for forged in 1...UInt64(SequenceLines.capacity) {
            #expect(Self.judge(&lines, Self.incarnation(Self.now + 5_000 * forged), 1) == Self.restart)
        }
        #expect(!lines.lines.contains { $0.incarnation == real })
        #expect(Self.judge(&lines, real, 2) == .duplicate)
        #expect(Self.judge(&lines, real, 3) == .accepted(missed: 0, restarted: false, conflict: true))
        #expect(Self.judge(&lines, real, 4) == Self.new)
        #expect(Self.judge(&lines, real, 3) == .duplicate)
    }

    @Test func aSignedLineStartsOnlyIfAllowedAndOnlyFromAValidatedMessage() {
        let first = Self.incarnation(Self.now)
        var lines = SequenceLines(incarnation: first, sequence: 1)
        let second = Self.incarnation(Self.now + 1)
        #expect(Self.judge(&lines, second, 1, validated: false) == .ignored)
        #expect(Self.judge(&lines, second, 1, mayStartLine: false) == .refused)
        #expect(Self.judge(&lines, first, 2) == Self.new)
    }

    @Test func forgottenIncarnationsStayReplaysRetiredOrBelowTheFloor() {
        var incarnations: [UInt64] = []
        var lines = SequenceLines(incarnation: Self.incarnation(Self.now), sequence: 1)
        incarnations.append(lines.lines[0].incarnation)
        for restart in 1...20 as ClosedRange<UInt64> {
            let next = Self.incarnation(Self.now + restart)
            incarnations.append(next)
            #expect(Self.judge(&lines, next, 1) == Self.restart)
            #expect(Self.judge(&lines, next, 2) == Self.new)
        }
        #expect(lines.lines.count == SequenceLines.capacity)
        for old in incarnations.dropLast(SequenceLines.capacity) {
            // Retired (a copy is a duplicate) or below the floor (a replay); never new.
            #expect([.duplicate, .replayed].contains(Self.judge(&lines, old, 1)))
            #expect(Self.judge(&lines, old, 4) == .replayed)
        }
        #expect(Self.judge(&lines, incarnations.last!, 3) == Self.new)
    }

    @Test func forgottenIncarnationsOfEarlierVersionsStayReplaysToo() {
        // Incarnations no relay of this version makes (absent: 0, or small), one after another.
        var lines = SequenceLines(incarnation: 0, sequence: 1)
        for incarnation in 1...20 as ClosedRange<UInt64> {
            #expect(Self.judge(&lines, incarnation, 1) == Self.restart)
        }
        for old in 0...(20 - UInt64(SequenceLines.capacity)) {
            #expect([.duplicate, .replayed].contains(Self.judge(&lines, old, 1)), "\(old)")
            #expect(Self.judge(&lines, old, 3) == .replayed, "\(old)")
        }
        #expect(Self.judge(&lines, 20, 2) == Self.new)
    }

    @Test func incarnationsCarryTheirStartAndAreNeverZero() {
        let made = Incarnation.make(wallClockMilliseconds: Self.now)
        #expect(Incarnation.milliseconds(made) == Self.now)
        #expect(Incarnation.make(wallClockMilliseconds: 0) >= 1)
        let latest = Incarnation.make(wallClockMilliseconds: .max)
        #expect(Incarnation.milliseconds(latest) == .max >> Incarnation.randomBits)
    }
}

/// The table of instances without a server (issue #35, item 9).
struct InstanceTableTests {
    static func lines() -> SequenceLines { SequenceLines(incarnation: 1, sequence: 1) }

    @Test func unsignedInventedIDsEvictStrangersNeverLockingANewInstanceOut() {
        let now = ContinuousClock.now
        var table = InstanceTable(capacity: 4, idleTimeout: .seconds(60), admitsBusy: true)
        let a = table.insert("a", lines: Self.lines(), now: now)!
        table.touch(a, now: now)  // heard twice: a regular
        for n in 0..<1_024 { #expect(table.insert("invented-\(n)", lines: Self.lines(), now: now) != nil) }
        #expect(table.insert("new", lines: Self.lines(), now: now) != nil)
        #expect(table.index(of: "a") != nil)
        #expect(table.count == 4)
    }

    @Test func unsignedRegularsAreEvictedLeastRecentlyHeardFirstWhenNoStrangerIsLeft() {
        let start = ContinuousClock.now
        var table = InstanceTable(capacity: 2, idleTimeout: .seconds(60), admitsBusy: true)
        for (offset, id) in ["a", "b"].enumerated() {
            let index = table.insert(id, lines: Self.lines(), now: start)!
            table.touch(index, now: start + .milliseconds(offset))
        }
        #expect(table.insert("c", lines: Self.lines(), now: start + .seconds(1)) != nil)
        #expect(table.index(of: "a") == nil && table.index(of: "b") != nil)
    }

    @Test func signedBusyInstancesAreKeptAndNewIDsRefusedUntilOneIsIdle() {
        let start = ContinuousClock.now
        var table = InstanceTable(capacity: 2, idleTimeout: .seconds(61), admitsBusy: false)
        _ = table.insert("a", lines: Self.lines(), now: start)
        _ = table.insert("b", lines: Self.lines(), now: start + .seconds(30))
        #expect(table.insert("c", lines: Self.lines(), now: start + .seconds(60)) == nil)
        #expect(table.forgottenHeard == nil)
        #expect(table.insert("c", lines: Self.lines(), now: start + .seconds(61)) != nil)
        #expect(table.index(of: "a") == nil)
        #expect(table.forgottenHeard == start)
    }
}

/// A transport that never connects: for tests of the receive path alone.
struct SilentTransport: RelayTransport {
    var maximumPayloadBytes: Int { 7999 }
    func run(
        channel: RelayChannel, logger: Logger, connected: @escaping @Sendable (any RelayPublisher) -> Void,
        receive: @escaping @Sendable (String) -> Void
    ) async throws {
        try await Task.sleep(for: .seconds(1_000_000))
    }
}

/// What time still decides, signed: whether an id no longer tracked may start again.
struct ForgottenInstanceTests {
    @Test func signedAMessageSentBeforeAForgottenInstanceWasLastHeardIsAReplayAndAFreshOneIsNot() throws {
        var configuration = RelayConfiguration(transport: SilentTransport(), instanceID: "self")
        let key = try RelaySigningKey(id: "k", secret: [UInt8](repeating: 1, count: 32))
        configuration.signing = RelaySigning(current: key)
        var state = Relay.State(instances: InstanceTable(capacity: 2, idleTimeout: .seconds(61), admitsBusy: false))
        let now = ContinuousClock.now
        let wall = Relay.wallClockMicroseconds() / 1000
        let incarnation = Incarnation.make(wallClockMilliseconds: wall - 120_000)
        func track(_ id: String, sentAt sent: UInt64, at instant: ContinuousClock.Instant) -> String {
            let envelope = Wire.Envelope(v: 1, o: id, i: incarnation, s: 1, w: sent, t: .post, n: "x")
            switch Relay.track(envelope, validated: true, now: instant, in: &state, configuration: configuration) {
            case .new: return "new"
            case .duplicate: return "duplicate"
            case .replayed: return "replayed"
            case .refused: return "refused"
            case .ignored: return "ignored"
            }
        }
        // a and z heard two minutes ago, then silent; b's message forgets a.
        #expect(track("a", sentAt: wall - 120_000, at: now - .seconds(120)) == "new")
        #expect(track("z", sentAt: wall - 120_000, at: now - .seconds(120)) == "new")
        #expect(track("b", sentAt: wall, at: now) == "new")
        #expect(state.instances.index(of: "a") == nil)
        // a's message again: sent before a was last heard (plus the skew), so possibly seen.
        #expect(track("a", sentAt: wall - 120_000, at: now) == "replayed")
        #expect(track("a", sentAt: wall - 120_000 + 30_000, at: now) == "replayed")
        // Sent since (a restarted, or a new instance with a's id): heard.
        #expect(track("a", sentAt: wall - 1_000, at: now) == "new")
    }
}

/// Warnings and logged fields without a server (issue #35, items 10 and 11).
struct LoggingTests {
    @Test func warningsOfAKindComeAtMostOncePerIntervalAndSayHowManyWereHeldBack() {
        var limiter = WarningLimiter(interval: .seconds(1))
        let start = ContinuousClock.now
        #expect(limiter.admit("own id", now: start) == 0)
        for n in 1...4_999 { #expect(limiter.admit("own id", now: start + .microseconds(n)) == nil) }
        #expect(limiter.admit("missed", now: start) == 0)  // another kind
        #expect(limiter.admit("own id", now: start + .seconds(1)) == 4_999)
        #expect(limiter.admit("own id", now: start + .seconds(3)) == 0)
    }

    @Test func loggedFieldsCannotPassForALogLinesStructure() {
        let forged = "x] relay shut down with its queue sent [ unsent=0"
        let logged = Wire.loggable(forged)
        let expected =
            #"x\u{5d}\u{20}relay\u{20}shut\u{20}down\u{20}with\u{20}its\u{20}queue\u{20}sent\u{20}"#
            + #"\u{5b}\u{20}unsent\u{3d}0"#
        #expect(logged == expected)
        #expect(!logged.contains(" ") && !logged.contains("[") && !logged.contains("]") && !logged.contains("="))
        #expect(Wire.loggable(#"quote" and \ backslash"#) == #"quote\u{22}\u{20}and\u{20}\u{5c}\u{20}backslash"#)
        #expect(Wire.loggable("9F0C1B8E-3D2A-4C51-8F7E-1A2B3C4D5E6F") == "9F0C1B8E-3D2A-4C51-8F7E-1A2B3C4D5E6F")
        #expect(Wire.loggable("host-1.example:8080/é漢字🎉") == "host-1.example:8080/é漢字🎉")
        #expect(Wire.loggable("a b=c", keepingSpaces: true) == #"a b\u{3d}c"#)
        #expect(Wire.loggable(String(repeating: "i", count: 200)).count == 129)
    }
}
#endif

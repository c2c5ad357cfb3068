#if Relay
import Foundation
import SwiftKVO

// Receiving: every message from the broker is checked before anything in it
// is trusted, tracked per sender (sequence, incarnation), and delivered —
// a post on the hub, a property entry merged under its replication's
// isolation — or dropped and counted.

extension Relay {
    enum Reason: String {
        case malformed, unknownName, wrongType, oversized, duplicate, stale, futureStamp, untracked, ownID
        case unsigned, badSignature, replayed
    }

    func drop(_ reason: Reason, _ instance: String? = nil) {
        state.withLock { state in
            switch reason {
            case .malformed: state.statistics.droppedMalformed.addSaturating(1)
            case .unknownName: state.statistics.droppedUnknownName.addSaturating(1)
            case .wrongType: state.statistics.droppedWrongType.addSaturating(1)
            case .oversized: state.statistics.droppedOversized.addSaturating(1)
            case .duplicate: state.statistics.droppedDuplicate.addSaturating(1)
            case .stale: state.statistics.droppedStale.addSaturating(1)
            case .futureStamp: state.statistics.droppedFutureStamp.addSaturating(1)
            case .untracked: state.statistics.droppedUntracked.addSaturating(1)
            case .ownID: state.statistics.droppedOwnID.addSaturating(1)
            case .unsigned: state.statistics.droppedUnsigned.addSaturating(1)
            case .badSignature: state.statistics.droppedBadSignature.addSaturating(1)
            case .replayed: state.statistics.droppedReplayed.addSaturating(1)
            }
        }
        // Identifiers from the wire are metadata values, escaped: never part of the message.
        configuration.logger.debug(
            "relay dropped a message",
            metadata: ["reason": "\(reason.rawValue)", "instance": "\(instance.map { Wire.loggable($0) } ?? "?")"])
    }

    /// `payload` as a message, or nil if it is not one (malformed): the wrong
    /// version, or an instance id that is empty, too long or not printable.
    func decode(_ payload: String) -> Wire.Incoming? {
        guard
            let message = Wire.readPost(payload, registration: registration)
                ?? (try? decoder.decode(Wire.Incoming.self, from: Data(payload.utf8))),
            message.envelope.v == Wire.version, Wire.isValidInstanceID(message.envelope.o)
        else { return nil }
        return message
    }

    /// One message from the broker (the transport calls it, one at a time).
    /// Nothing in it is trusted before it decoded; an own message, which the
    /// broker delivers back to its sender, is told by its first bytes and a
    /// hash of what was sent, and skipped without decoding.
    ///
    /// Whether it is new is decided by its place in its sender's sequence
    /// (``SequenceLines``), never by when it was sent or read: a late read
    /// only delays a message. Only a message that validated entirely (a
    /// registered name, a body of its types, a stamp within the clock skew)
    /// may start a new incarnation or a jump beyond
    /// ``RelayConfiguration/maximumSequenceJump``.
    ///
    /// A property entry is applied here, under its replication's isolation,
    /// unless that is an actor: then what to await is returned.
    package func receive(_ payload: String) -> (@Sendable () async -> Void)? {
        guard payload.utf8.count <= configuration.transport.maximumPayloadBytes else {
            drop(.oversized)
            return nil
        }
        if payload.utf8.starts(with: wirePrefix.utf8),
            state.withLock({ $0.echoes.remove(payload.hashValue) != nil })
        {
            state.withLock { $0.statistics.ownMessagesSkipped.addSaturating(1) }
            return nil
        }
        guard let payload = verified(payload) else { return nil }
        guard let message = decode(payload) else {
            drop(.malformed)
            return nil
        }
        let envelope = message.envelope
        let instance = envelope.o
        if instance == configuration.instanceID {
            // A resend's second echo (or a copy of one), or another relay with this id.
            guard envelope.i == incarnation else {
                warn(
                    "relay received a message with its own instance id from another incarnation",
                    metadata: ["instance": "\(Wire.loggable(instance))", "incarnation": "\(envelope.i)"])
                drop(.ownID, instance)
                return nil
            }
            state.withLock { $0.statistics.ownMessagesSkipped.addSaturating(1) }
            return nil
        }
        let invalid: Reason?
        switch message.body {
        case .unknownName: invalid = .unknownName
        case .wrongType: invalid = .wrongType
        case .set(_, _, let stamp, _) where stamp > stampHorizon: invalid = .futureStamp
        case .set, .post: invalid = nil
        }
        let now = ContinuousClock.now
        let tracked = state.withLock { state in
            Self.track(envelope, validated: invalid == nil, now: now, in: &state, configuration: configuration)
        }
        switch tracked {
        case .duplicate:
            drop(.duplicate, instance)
            return nil
        case .replayed:
            drop(.replayed, instance)
            return nil
        case .refused:
            drop(.untracked, instance)
            return nil
        case .ignored:
            drop(invalid ?? .malformed, instance)
            return nil
        case .new(let report, let conflict):
            if conflict {
                warn(
                    "relay heard an instance go on with an incarnation after a newer one (forged, or its id is shared)",
                    metadata: ["instance": "\(Wire.loggable(instance))", "incarnation": "\(envelope.i)"])
            }
            if let report { resynchronize(report) }
        }
        if let invalid {
            drop(invalid, instance)
            return nil
        }
        switch message.body {
        case .unknownName, .wrongType:
            break
        case .post(let name, var userInfo):
            userInfo[RelayOrigin.userInfoKey] = RelayOrigin.remote(instance: instance)
            state.withLock { $0.statistics.delivered.addSaturating(1) }
            NotificationHub.default.post(name: name, object: self, userInfo: userInfo)
        case .set(let replication, let entry, let stamp, let value):
            let writer = Writer(id: instance, incarnation: envelope.i)
            let apply: @Sendable () -> Void = {
                switch replication.applyRemote(value, entry: entry, stamp: stamp, from: writer, relay: self) {
                case .applied: self.state.withLock { $0.statistics.delivered.addSaturating(1) }
                case .stale: self.drop(.stale, instance)
                case .wrongType: self.drop(.wrongType, instance)
                case .gone:
                    self.stopReplicating(replication.name)
                    self.drop(.unknownName, instance)
                }
            }
            if !replication.isolation.runSynchronously(apply) { return { await replication.isolation.run(apply) } }
        }
        return nil
    }

    /// `payload` without its signature if signing is on and it is signed
    /// with an accepted key for the relay's channel; nil (dropped and
    /// counted) if it is not. A state-table row's failure (`row`, its name)
    /// is also a warning: a stored value is not loaded.
    func verified(_ payload: String, row: String? = nil) -> String? {
        guard let signing = configuration.signing else { return payload }
        let reason: Reason
        switch signing.verify(payload, channel: configuration.channel) {
        case .valid(let message, _):
            return message
        case .unsigned: reason = .unsigned
        case .wronglySigned: reason = .badSignature
        }
        drop(reason)
        if let row {
            warn(
                "relay ignored a state-table row it could not verify; the value stays as it is here",
                metadata: [
                    "name": "\(Wire.loggable(row))", "reason": "\(reason.rawValue)",
                    "table": "\(configuration.stateTable?.name ?? "?")",
                ])
        }
        return nil
    }

    /// A resynchronization owed to the application for one instance.
    struct Report {
        let instance: String
        let missed: Int
        let restarted: Bool
    }

    /// Posts ``resynchronize`` for `report`, after loading the replicated
    /// values if the relay keeps state and replicates any.
    func resynchronize(_ report: Report) {
        let loads = state.withLock { state in
            guard Self.keepsState(state, configuration), !state.replications.isEmpty else { return false }
            state.stateRequest.reports.append(report)
            return true
        }
        if loads { ringLoader.yield() } else { postReport(report, updated: []) }
    }

    /// Posts ``resynchronize`` for `report` with the names a load brought up
    /// to date, and logs it (one warning each).
    func postReport(_ report: Report, updated: [String]) {
        state.withLock { $0.statistics.resynchronizations.addSaturating(1) }
        var userInfo: [String: any Sendable] = ["instance": report.instance, "updated": updated]
        if report.missed > 0 {
            userInfo["reason"] = "missed"
            userInfo["missed"] = report.missed
            userInfo["restarted"] = report.restarted
            warn(
                "relay missed messages",
                metadata: [
                    "instance": "\(Wire.loggable(report.instance))", "missed": "\(report.missed)",
                    "restarted": "\(report.restarted)",
                ])
        } else {
            userInfo["reason"] = "restarted"
            warn(
                "relay heard a restarted instance", metadata: ["instance": "\(Wire.loggable(report.instance))"])
        }
        postResynchronize(userInfo)
    }

    /// Posts the coalesced resynchronizations whose instance's interval is over at `now`.
    package func flushResynchronizations(now: ContinuousClock.Instant) {
        let interval = configuration.resynchronizationInterval
        let reports = state.withLock { state -> [Report] in
            var reports: [Report] = []
            for id in state.pendingResynchronizations {
                guard let index = state.instances.index(of: id) else {
                    state.pendingResynchronizations.remove(id)
                    continue
                }
                var entry = state.instances[index]
                if let last = entry.lastResynchronized, now - last < interval { continue }
                reports.append(Report(instance: id, missed: entry.pendingMissed, restarted: entry.pendingRestart))
                entry.pendingMissed = 0
                entry.pendingRestart = false
                entry.lastResynchronized = now
                state.instances[index] = entry
                state.pendingResynchronizations.remove(id)
            }
            return reports
        }
        for report in reports { resynchronize(report) }
    }

    /// Looks names up while a message decodes, so it is decoded once.
    var resolver: Wire.Resolver {
        Wire.Resolver { [weak self] kind, name in self?.registration(kind, name) }
    }

    /// What `name` is registered as for messages of `kind`, if anything.
    func registration(_ kind: Wire.Kind, _ name: String) -> Wire.Registration? {
        state.withLock { state in
            switch kind {
            case .post: state.bridges[name].map { .bridge($0.name, $0.schema) }
            case .set: state.replications[name].map { .replication($0) }
            }
        }
    }
    enum Tracked {
        /// Not seen before: deliver it, after posting the resynchronization
        /// if any; `conflict`: it continued a superseded incarnation (warn).
        case new(Report?, conflict: Bool)
        /// At or below the highest sequence number heard of its incarnation.
        case duplicate
        /// Of a superseded, retired or older incarnation; or signed, of an
        /// instance not tracked and sent before an instance was forgotten.
        case replayed
        /// A new id while the table is full of instances still sending.
        case refused
        /// Not tracked: it did not validate, and would have started a new
        /// line (a new id, a new incarnation, or a jump beyond the bound).
        case ignored
    }

    /// Records `envelope` in its instance's ``SequenceLines`` and says what
    /// to do with the message. `validated`: the whole message validated, not
    /// only its envelope. Gaps and restarts are reported at most once per
    /// ``RelayConfiguration/resynchronizationInterval`` per instance; in
    /// between they are summed and left for ``flushResynchronizations(now:)``.
    static func track(
        _ envelope: Wire.Envelope, validated: Bool, now: ContinuousClock.Instant, in state: inout State,
        configuration: RelayConfiguration
    ) -> Tracked {
        let instance = envelope.o
        let skew = milliseconds(configuration.maximumClockSkew)
        let forgotten = state.instances.forgottenHeard
        // (Closures written at their call, so none is allocated per message.)
        guard let index = state.instances.index(of: instance) else {
            guard validated else { return .ignored }
            guard mayStartLine(envelope, forgotten: forgotten, now: now, skew: skew, configuration) else {
                return .replayed
            }
            let lines = SequenceLines(incarnation: envelope.i, sequence: envelope.s)
            guard state.instances.insert(instance, lines: lines, now: now) != nil else { return .refused }
            return .new(nil, conflict: false)
        }
        let verdict = state.instances.withLines(index) { lines in
            lines.judge(
                incarnation: envelope.i, sequence: envelope.s, validated: validated,
                bound: configuration.maximumSequenceJump, tolerance: skew > .max / 2 ? .max : 2 * skew,
                plausible: { Incarnation.plausible(wallClockMilliseconds: wallClockMicroseconds() / 1000, skew: skew) },
                mayStartLine: { mayStartLine(envelope, forgotten: forgotten, now: now, skew: skew, configuration) })
        }
        let missed: Int
        let restarted: Bool
        let conflict: Bool
        switch verdict {
        case .duplicate: return .duplicate
        case .replayed, .refused: return .replayed
        case .ignored: return .ignored
        case .accepted(let gap, let started, let continued):
            missed = Int(clamping: gap)  // at most the bound
            restarted = started || continued
            conflict = continued
        }
        if conflict { state.statistics.incarnationConflicts.addSaturating(1) }
        var report: Report?
        if missed > 0 || restarted {
            // Copied out and back only here: most messages follow the last one.
            var entry = state.instances[index]
            state.statistics.missed.addSaturating(missed)
            entry.pendingMissed.addSaturating(missed)
            entry.pendingRestart = entry.pendingRestart || restarted
            if let last = entry.lastResynchronized, now - last < configuration.resynchronizationInterval {
                state.pendingResynchronizations.insert(instance)
                state.statistics.resynchronizationsCoalesced.addSaturating(1)
            } else {
                report = Report(instance: instance, missed: entry.pendingMissed, restarted: entry.pendingRestart)
                entry.pendingMissed = 0
                entry.pendingRestart = false
                entry.lastResynchronized = now
                state.pendingResynchronizations.remove(instance)
            }
            state.instances[index] = entry
        }
        state.instances.touch(index, now: now)
        return .new(report, conflict: conflict)
    }

    /// Whether `envelope` may start a line of an incarnation not tracked.
    /// Signed, only if it was sent after every forgotten instance was last
    /// heard (`forgotten`, with the skew): else it may be a replay of one of
    /// theirs. Unsigned, always (no time from the wire is trusted).
    static func mayStartLine(
        _ envelope: Wire.Envelope, forgotten: ContinuousClock.Instant?, now: ContinuousClock.Instant, skew: UInt64,
        _ configuration: RelayConfiguration
    ) -> Bool {
        guard configuration.signing != nil else { return true }
        guard let sent = envelope.w else { return false }
        guard let forgotten else { return true }
        let wallNow = wallClockMicroseconds() / 1000
        let heard = wallNow - min(wallNow, milliseconds(now - forgotten))
        let (limit, overflow) = heard.addingReportingOverflow(skew)
        return !overflow && sent > limit
    }

    /// `duration` in whole milliseconds (saturating; zero if negative).
    static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1000)
        let (sum, over) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000_000_000))
        return overflow || over ? .max : sum
    }
}
#endif

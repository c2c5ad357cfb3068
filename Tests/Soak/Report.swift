// Report.swift — the summary printed at the end of a run.

import CSoakSupport

#if canImport(Glibc)
import Glibc
#endif

/// Whether the engine's counters started near their ends (counters.h): how `make soak` runs.
let countersNearTheirEnds: Bool = {
    guard let value = getenv("CKVO_COUNTERS_NEAR_END") else { return false }
    let text = String(cString: value)
    return !text.isEmpty && text != "0"
}()

struct Report {
    let elapsed: Double
    let baseline: Int
    let end: Int

    private var backlogLine: String {
        let peak: Int = BacklogWatch.peak.load(ordering: .relaxed)
        let slowest: Double = Double(csoak_unobserve_slowest_ns()) / 1e6
        return "  backlog  pending releases peaked at \(peak) (bound \(BacklogWatch.bound)); "
            + "slowest ckvo_unobserve \(oneDecimal(slowest)) ms"
    }

    func print() {
        let t = Tally.shared
        let lines = [
            "soak: finished in \(oneDecimal(elapsed)) s",
            "  C API    announcements \(t[.announcements]) (+ \(t[.priorAnnouncements]) prior), "
                + "callbacks \(t[.engineCallbacks]), (observation, dispatch) spans checked \(t[.engineSpans])",
            "           observations \(t[.engineObservations]); removals: unobserve \(t[.plainRemovals]), "
                + "sync \(t[.syncRemovals]), deferred \(t[.deferredRemovals]) (\(t[.removedByOthers]) already gone)",
            "           object removals \(t[.objectRemovals]), owner removals \(t[.ownerRemovals]), "
                + "flushes \(t[.flushes]); duplicate registrations refused \(t[.duplicateRegistrations])",
            "  Swift    changes: value \(t[.swiftChanges]), items \(t[.arrayChanges]); "
                + "callbacks \(t[.swiftCallbacks]); ranges checked \(t[.subjectRanges])",
            "           token observations \(t[.tokenObservations]), "
                + "controller observations \(t[.controllerObservations])",
            "           subjects created \(subjectPopulation.entered), died \(subjectPopulation.left); "
                + "observers created \(observerPopulation.entered), died \(observerPopulation.left)",
            "  hub      posts \(t[.posts]), observer registrations \(t[.listenerRegistrations]), "
                + "deliveries \(t[.hubDeliveries])",
            "  threads  short-lived threads started \(t[.threadsStarted])",
            backlogLine,
            "  counters " + (countersNearTheirEnds ? "started 2^16 before their ends (CKVO_COUNTERS_NEAR_END)" : "from zero"),
            "  memory   RSS \(Memory.mebibytes(baseline)) after warm-up, \(Memory.mebibytes(end)) at the end: "
                + "\(end >= baseline ? "+" : "")\(Memory.mebibytes(end - baseline)) "
                + (Memory.isMeaningful
                    ? "(bound +\(Memory.mebibytes(Memory.growthBound)))" : "(not checked under a sanitizer)"),
        ]
        lines.forEach { Swift.print($0) }
        let (messages, count) = verdict.report
        if count == 0 {
            Swift.print("soak: OK")
        } else {
            messages.forEach { Swift.print("  FAILED: \($0)") }
            if count > messages.count { Swift.print("  ... and \(count - messages.count) more") }
            Swift.print("soak: FAILED (\(count) broken invariant\(count == 1 ? "" : "s"))")
        }
    }
}

/// `value` with one decimal.
func oneDecimal(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

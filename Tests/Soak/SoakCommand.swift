// SoakCommand.swift — `swift run -c release Soak [--seconds N] [--seed S]`.
//
// Runs every workload of the soak concurrently for a bounded time (Round), with
// exact accounting, checks that memory returns to its baseline (Memory), prints
// a report and exits non-zero if any invariant broke. A watchdog ends the
// process if it has not finished well after its time (a hang is a failure too).
//
// What is checked, and where:
//   - every change is delivered exactly once to every observation registered for
//     its whole dispatch: C API per dispatch (EngineAnnouncer, EngineSlot), Swift
//     per subject sequence (DeliveryRecord), hub posts to every sender by bounds
//     plus no duplicate within a post (DeliveryRecord, SwiftTrace);
//   - registration order, no duplicate call, values as the options ask
//     (EngineAnnouncer, SwiftTrace, observation.c, Receiver);
//   - no call after a removal returned, after a strict removal (nor one still
//     running), after an object's or owner's removal, after the context was
//     released, into an observer that began to die, or for another object at a
//     reused address (observation.c, DeliveryRecord, Receiver);
//   - every C context released exactly once and never while registered
//     (observation.c, RetiredRecords); every Swift handler released (a second
//     release would be an over-release, a crash) and every subject and observer
//     dead at the end (Population); both hubs empty at the end (Round,
//     EngineWorld); RSS back to its baseline (Memory).
// Not checked: whether an observation registered while a dispatch was running
// got that change (outside the engine, "during" cannot be told from "just
// before": such pairs are allowed either way); that a KVOController's death
// removes its observations at once rather than when next met (both are
// allowed); calls into a C context after it left the quarantine.

import ArgumentParser
import CKVOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

@main
struct SoakCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Soak",
        abstract: "Soak test: SwiftKVO and CKVOCore under concurrent churn, with exact accounting.",
        discussion: """
            A warm-up round (a tenth of the time, 1 to 5 s) and a main round run the same workloads: \
            C API dispatchers, observers and a remover of objects and owners; Swift subjects changed, \
            observed through tokens and KVOControllers and dying on other threads; named notifications \
            with weak observers dying; short-lived threads. Memory is compared between the ends of the \
            two rounds. Exits 0 when every invariant held.
            """)

    /// How long after its time the watchdog ends a run that has not finished.
    static let watchdogMargin: Double = 30

    @Option(help: "Total running time in seconds, both rounds.")
    var seconds: Double = 60

    @Option(help: "Seed of the workers' choices of operations.")
    var seed: UInt64 = 1

    func validate() throws {
        guard seconds >= 2 else { throw ValidationError("--seconds must be at least 2") }
    }

    func run() throws {
        let started = monotonicNanoseconds()
        let warmUp = min(5, max(1, seconds / 10))
        print(
            "soak: \(oneDecimal(seconds)) s (warm-up round \(oneDecimal(warmUp)) s), seed \(seed), "
                + "CKVOCore \(String(cString: ckvo_version_string()))")
        let watchdog = Watchdog(seconds: seconds + Self.watchdogMargin)

        var violations = EngineViolations()
        Round(seconds: warmUp, seed: seed, number: 0).run(&violations)
        let baseline = Memory.residentBytes()
        if !verdict.hasFailed {
            Round(seconds: seconds - warmUp, seed: seed, number: 1).run(&violations)
        }
        let end = Memory.residentBytes()
        watchdog.disarm()
        let growth = end - baseline
        verdict.check(
            growth <= Memory.growthBound || !Memory.isMeaningful,
            "memory: RSS grew by \(Memory.mebibytes(growth)) from the end of the warm-up round to the end of the run "
                + "(bound \(Memory.mebibytes(Memory.growthBound)))")

        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        Report(elapsed: elapsed, baseline: baseline, end: end).print()
        if verdict.hasFailed { throw ExitCode.failure }
    }
}

/// Ends the process if the run is still going after its time.
final class Watchdog: Sendable {
    private final class Switch: Sendable {
        let armed = Atomic<Bool>(true)
    }

    private let state = Switch()
    private let thread: WorkerThread

    /// Starts watching: unless `disarm()` is called within `seconds`, the process ends with status 2.
    init(seconds: Double) {
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        let state = self.state
        thread = WorkerThread {
            while monotonicNanoseconds() < deadline {
                if !state.armed.load(ordering: .relaxed) { return }
                usleep(100_000)
            }
            print("soak: FAILED: still running \(seconds) s after it started (a hang?)")
            fflush(nil)
            _exit(2)
        }
    }

    /// Stops watching (and waits for the watching thread).
    func disarm() {
        state.armed.store(false, ordering: .relaxed)
        thread.join()
    }
}

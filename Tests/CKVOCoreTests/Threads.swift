// Raw pthreads for tests (through CKVOTestSupport), and the CKVO_STRESS loop scaling.

import CKVOTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// True when the environment asks for long stress runs (`CKVO_STRESS=1`).
let stressRun: Bool = {
    guard let value = getenv("CKVO_STRESS") else { return false }
    return String(cString: value) == "1"
}()

/// `normal` iterations by default, `stress` under CKVO_STRESS=1.
func iterations(_ normal: Int, stress: Int) -> Int { stressRun ? stress : normal }

private final class ThreadBody {
    let run: (Int) -> Void
    init(_ run: @escaping (Int) -> Void) { self.run = run }
}

/// Runs `body(index)` on `count` new pthreads released together by a barrier; returns when all
/// have finished (joined, so everything they wrote is visible afterwards).
func runThreads(_ count: Int, _ body: @escaping (Int) -> Void) {
    let box = ThreadBody(body)
    let status = withExtendedLifetime(box) {
        ckvots_run_threads(
            UInt32(count),
            { index, arg in Unmanaged<ThreadBody>.fromOpaque(arg!).takeUnretainedValue().run(Int(index)) },
            Unmanaged.passUnretained(box).toOpaque())
    }
    precondition(status == 0, "ckvots_run_threads failed: \(status)")
}

/// Runs `body` on a new pthread and waits for it at most `seconds`. Returns false if it did not
/// finish (a hang); the body and what it captures are then leaked on purpose.
func finishes(within seconds: UInt32, _ body: @escaping () -> Void) -> Bool {
    let box = Unmanaged.passRetained(ThreadBody { _ in body() })
    let status = ckvots_run_with_timeout(
        { _, arg in Unmanaged<ThreadBody>.fromOpaque(arg!).takeUnretainedValue().run(0) },
        box.toOpaque(), seconds)
    if status == 0 {
        box.release()
        return true
    }
    return false
}

/// The caller's thread identity, as recorded in `Event.thread`.
func currentThreadID() -> UInt64 { ckvots_thread_id() }

/// A shared, sequentially consistent counter (wraps `ckvots_counter_t`).
final class AtomicCounter: @unchecked Sendable {  // all state is a C atomic
    let raw: OpaquePointer

    init() {
        guard let raw = ckvots_counter_create() else { fatalError("out of memory") }
        self.raw = raw
    }

    deinit { ckvots_counter_destroy(raw) }

    @discardableResult func next() -> UInt64 { ckvots_counter_next(raw) }
    @discardableResult func add(_ delta: UInt64) -> UInt64 { ckvots_counter_add(raw, delta) }
    var value: UInt64 {
        get { ckvots_counter_load(raw) }
        set { ckvots_counter_store(raw, newValue) }
    }
}

/// Gives other threads a chance to run (sched_yield).
func yieldThread() { sched_yield() }

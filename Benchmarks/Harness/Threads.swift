// Threads.swift — clocks, plain threads, and a background loop.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CBenchFloor
import Synchronization

/// Monotonic time in nanoseconds.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// What `runOnThreads` saw.
struct ThreadRunResult {
    /// From the first thread's start to the last thread's end, in seconds.
    var wallSeconds: Double
    /// Sum of the threads' callback counts (`cbench_take_count`).
    var callbacks: UInt64
}

private final class ThreadRunState: @unchecked Sendable {
    let body: @Sendable (Int) -> Void
    let barrier: UnsafeMutablePointer<pthread_barrier_t>
    var starts: [UInt64]
    var ends: [UInt64]
    var counts: [UInt64]

    init(threads: Int, body: @escaping @Sendable (Int) -> Void) {
        self.body = body
        barrier = .allocate(capacity: 1)
        pthread_barrier_init(barrier, nil, UInt32(threads))
        starts = Array(repeating: 0, count: threads)
        ends = Array(repeating: 0, count: threads)
        counts = Array(repeating: 0, count: threads)
    }

    deinit {
        pthread_barrier_destroy(barrier)
        barrier.deallocate()
    }
}

private final class ThreadStart: @unchecked Sendable {
    let state: ThreadRunState
    let index: Int
    init(state: ThreadRunState, index: Int) {
        self.state = state
        self.index = index
    }
}

/// Runs `body(i)` on `count` new threads, released together by a barrier.
/// Each thread's slots in the state are written by that thread only and read
/// after `pthread_join`, which orders them.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> ThreadRunResult {
    let state = ThreadRunState(threads: count, body: body)
    var threads: [pthread_t] = []
    for index in 0..<count {
        let start = Unmanaged.passRetained(ThreadStart(state: state, index: index)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
            let state = start.state
            _ = cbench_take_count()
            pthread_barrier_wait(state.barrier)
            let t0 = nowNanoseconds()
            state.body(start.index)
            let t1 = nowNanoseconds()
            state.starts[start.index] = t0
            state.ends[start.index] = t1
            state.counts[start.index] = cbench_take_count()
            return nil
        }, start)
        precondition(status == 0, "pthread_create failed: \(status)")
        threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
    let wall = Double(state.ends.max()! - state.starts.min()!) / 1e9
    return ThreadRunResult(wallSeconds: wall, callbacks: state.counts.reduce(0, +))
}

/// A thread that runs `body` over and over until `stop()`: the concurrent
/// dispatcher of the churn workload.
final class BackgroundLoop: @unchecked Sendable {
    private let stopping = Atomic<Bool>(false)
    private let iterations = Atomic<Int>(0)
    private var thread = pthread_t()
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
        let me = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&thread, nil, { raw in
            let loop = Unmanaged<BackgroundLoop>.fromOpaque(raw!).takeRetainedValue()
            var n = 0
            while !loop.stopping.load(ordering: .relaxed) {
                loop.body()
                n += 1
            }
            loop.iterations.store(n, ordering: .relaxed)
            _ = cbench_take_count()
            return nil
        }, me)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    /// Stops the loop, waits for the thread, and returns how many times `body` ran.
    @discardableResult
    func stop() -> Int {
        stopping.store(true, ordering: .relaxed)
        pthread_join(thread, nil)
        return iterations.load(ordering: .relaxed)
    }
}

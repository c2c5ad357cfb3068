// Threads.swift — plain pthreads for the soak's workers, and the monotonic clock.
//
// Workers are raw pthreads, not Foundation threads or tasks, so that the soak
// itself adds nothing between the threads and the library (no thread pools
// whose threads outlive a round and blur the memory comparison).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Monotonic time in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// A started thread; `join()` waits for it.
struct WorkerThread: Sendable {
    private let handle: pthread_t

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts a thread running `body`. A thread that cannot be started ends the soak:
    /// running with fewer threads than planned would check less than it claims.
    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(
            &handle, nil,
            { raw in
                Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, context)
        if status != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            fatalError("soak: pthread_create failed with \(status)")
        }
        self.handle = handle
    }

    func join() {
        pthread_join(handle, nil)
    }
}

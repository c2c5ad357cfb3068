// CToSwiftClosurePeer.swift — the floor of calling Swift from C: the C floor's
// loop (Benchmarks/CFloor/floor.c) whose observers are Swift closures, reached
// the way a C library reaches a Swift callback: its context is an unmanaged
// box, and one `@convention(c)` trampoline takes the box and calls the closure
// it holds. This is "the cost of merely calling a Swift closure from C" that
// notes/peers.md measures (8.0 ns at N = 1000 there) and issue #4's fan-out
// target names. Written plainly, the trampoline retains and releases the box
// around the call; SwiftKVO's trampoline borrows it instead.

import CBenchFloor

struct CToSwiftClosurePeer: FixtureFactories {
    let id = "c-to-swift"
    let title = "C loop calling Swift closures via a trampoline (floor)"
    let fanOutIsThreadSafe = true

    /// One observer's closure, as the C loop's context.
    final class ClosureBox {
        let callback: () -> Void
        init(_ callback: @escaping () -> Void) { self.callback = callback }
    }

    /// Registers a closure capturing a new observer with `subject`. Returns the
    /// context, which holds its box at +1 until `release(_:)`.
    static func observe(_ subject: OpaquePointer) -> UnsafeMutableRawPointer {
        let observer = BenchObserver()
        let box = ClosureBox { [observer] in observerDidChange(observer) }
        let context = Unmanaged.passRetained(box).toOpaque()
        precondition(cbench_subject_observe(subject, closureTrampoline, context, nil) == 0)
        return context
    }

    static func release(_ context: UnsafeMutableRawPointer) {
        Unmanaged<ClosureBox>.fromOpaque(context).release()
    }

    /// Observers of one subject. Safe on several threads at once because nothing
    /// observes or unobserves meanwhile.
    final class FanOut: FanOutFixture, @unchecked Sendable {
        let subject: OpaquePointer
        let contexts: [UnsafeMutableRawPointer]
        let unitsPerIteration: Int
        init(observers: Int) {
            let subject = cbench_subject_create()!
            self.subject = subject
            contexts = (0..<observers).map { _ in CToSwiftClosurePeer.observe(subject) }
            unitsPerIteration = observers
        }
        func run(_ iterations: Int) { cbench_subject_set_loop(subject, iterations) }
        func tearDown() {
            cbench_subject_destroy(subject)
            contexts.forEach(CToSwiftClosurePeer.release)
        }
    }

    final class ManySubjects: CFloorSubjects, ManySubjectsFixture, @unchecked Sendable {
        private var contexts: [UnsafeMutableRawPointer] = []
        init(subjects count: Int) {
            var contexts: [UnsafeMutableRawPointer] = []
            super.init(count: count) { contexts.append(CToSwiftClosurePeer.observe($0)) }
            self.contexts = contexts
        }
        override func tearDown() {
            super.tearDown()
            contexts.forEach(CToSwiftClosurePeer.release)
        }
    }

    func makeNoObserverSetter() -> (any Fixture)? { nil }  // the C floor's setter
}

/// The C callback of every observer: calls the closure in the box it is given.
private let closureTrampoline: cbench_fn_t = { context in
    Unmanaged<CToSwiftClosurePeer.ClosureBox>.fromOpaque(context!).takeUnretainedValue().callback()
}

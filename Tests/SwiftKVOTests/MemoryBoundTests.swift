// Memory comes back in the Swift layer: a million short-lived observed objects (ten million with
// SWIFTKVO_LONG_TESTS=1) — each observed once (through a token, a short-lived KVOController or a
// long-lived one that holds it weakly), set once, then dead — leave the resident set within 8 MiB
// of where it stood after a warm-up, at every checkpoint; every change is delivered once and every
// handler closure is released exactly once. (A million, not ten, by default: a debug build spends
// about 15 µs per object in the Swift layer, so ten million would add minutes to `make unit`.)
//
// RSS belongs to the whole process, and Swift Testing runs the other suites in parallel in this
// one (CKVOCoreTests' million-observer test alone moves it by hundreds of MiB), so the measured run
// happens in a child: the test starts this test executable again, filtered to itself, with
// SWIFTKVO_ISOLATED_TEST naming it, expects the child to pass, and echoes its numbers.
//
// Under sanitizers (`make tsan` / `make asan` export SWIFTKVO_SANITIZER; a sanitized build is also
// detected at compile time) RSS means nothing (ASan's quarantine, TSan's shadow memory) and ten
// million objects would be slow: the test then runs 100,000 in process and checks only the counts.

import Foundation
import IsolatedRunSupport
import SwiftKVOTestSupport
import Testing
@testable import SwiftKVO

/// An object that lives for one cycle.
private final class Ephemeral: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Ephemeral.value] }
    @Observed var value = 0
}

@Suite(.needsLayout("its registrations")) struct MemoryBoundTests {
    /// A sanitizer this run is built with, from `SWIFTKVO_SANITIZER` or the compiler; nil if none.
    static let sanitizer: String? = {
        if let value = ProcessInfo.processInfo.environment["SWIFTKVO_SANITIZER"], !value.isEmpty {
            return value
        }
        return skvo_alloc_counting_supported() ? nil : "detected at build time"
    }()

    /// The allowed growth of the resident set. Live data stays tiny (one object, one observation
    /// and one controller at a time, plus the long-lived controller's table of objects at reused
    /// addresses), so growth can only come from memory never returned: leaking even one 32-byte
    /// malloc chunk per 4 objects adds 8 MiB over a million (per 40 over ten million), an engine
    /// observation record per object 120 MB (1.2 GB). 8 MiB, twice the C API's bound because the
    /// Swift runtime and Foundation allocate on their own, leave room for allocator fragmentation;
    /// measured growth is well below that (see the echoed numbers).
    static let bound = 8 << 20

    struct Outcome {
        var delivered = 0, released = 0, before = 0, after = 0, peak = 0
    }

    /// The process's resident set size in bytes, from /proc/self/statm; 0 if unreadable.
    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Runs the object lifetimes numbered `range`, cycling through four ways of observing and
    /// dying (each in an explicit order: optionals are set to nil where the order matters).
    static func lifetimes(
        _ range: Range<Int>, observer: Observer, longLived: KVOController<Observer>, delivered: Counter,
        released: Counter
    ) {
        for i in range {
            var object: Ephemeral? = Ephemeral()
            let probe = LifetimeProbe(released)  // released with the handler closure
            switch i % 4 {
            case 0:  // a token, invalidated; then the object dies
                let token = try! object!.observe(\.value, options: .new) { _, change in
                    if change.newValue == i { delivered.increment() }
                    _ = probe
                }
                object!.value = i
                token.invalidate()
                object = nil
            case 1:  // a token; the object dies first (its registrar removes the observation), then the token
                var token: ObservationToken? = try! object!.observe(\.value) { _, _ in
                    delivered.increment()
                    _ = probe
                }
                object!.value = i
                object = nil
                withExtendedLifetime(token) {}
                token = nil
            case 2:  // a controller for this object only: it dies with its observations, then the object
                var controller: KVOController<Observer>? = KVOController(observer: observer)
                try! controller!.observe(object, \.value, options: .new) { _, _, change in
                    if change.newValue == i { delivered.increment() }
                    _ = probe
                }
                object!.value = i
                controller = nil
                object = nil
            default:  // a long-lived controller holding the object weakly: the object's death removes it
                try! longLived.observe(object, \.value) { _, _, _ in
                    delivered.increment()
                    _ = probe
                }
                object!.value = i
                object = nil
            }
        }
    }

    /// `warmUp` lifetimes, then `count` more in ten steps, sampling the resident set after the
    /// warm-up and after each step (each after a flush, so pending releases are not counted).
    static func run(warmUp: Int, count: Int) -> Outcome {
        let observer = Observer()
        let longLived = KVOController(observer: observer, retainsObserved: false)
        let delivered = Counter()
        let released = Counter()
        var outcome = Outcome()

        lifetimes(0..<warmUp, observer: observer, longLived: longLived, delivered: delivered, released: released)
        flushReleases()
        outcome.before = residentBytes()
        outcome.peak = outcome.before
        var start = warmUp
        let steps = 10
        for step in 0..<steps {
            let n = count / steps + (step < count % steps ? 1 : 0)
            lifetimes(
                start..<start + n, observer: observer, longLived: longLived, delivered: delivered, released: released)
            start += n
            flushReleases()
            outcome.peak = max(outcome.peak, residentBytes())
        }
        outcome.after = residentBytes()
        longLived.unobserveAll()
        flushReleases()
        outcome.delivered = delivered.count
        outcome.released = released.count
        withExtendedLifetime(observer) {}
        return outcome
    }

    @Test func shortLivedObservedObjectsKeepTheResidentSetBounded() async throws {
        let name = "shortLivedObservedObjectsKeepTheResidentSetBounded"
        if refusedWithoutLayout({ _ = try Ephemeral().observe(\.value) { _, _ in } }) { return }
        if Self.sanitizer != nil {
            // Sanitized: RSS means nothing; fewer objects, counts only.
            let outcome = Self.run(warmUp: 10_000, count: 90_000)
            #expect(outcome.delivered == 100_000)
            #expect(outcome.released == 100_000, "every handler closure released exactly once")
            return
        }
        guard isIsolatedChild(name) else {
            try await measureInChild(filter: "SwiftKVOTests.MemoryBoundTests/\(name)", name: name)
            return
        }

        let warmUp = 100_000
        let count = ProcessInfo.processInfo.environment["SWIFTKVO_LONG_TESTS"] != nil ? 10_000_000 : 1_000_000
        let outcome = Self.run(warmUp: warmUp, count: count)
        let growth = outcome.peak - outcome.before
        print(
            "memory-bound: Swift API, \(count) short-lived observed objects after \(warmUp) warm-up: "
                + "RSS \(outcome.before) -> \(outcome.after) bytes, peak growth \(growth) bytes "
                + "(bound \(Self.bound))")
        #expect(outcome.delivered == warmUp + count, "every change delivered exactly once")
        #expect(outcome.released == warmUp + count, "every handler closure released exactly once")
        #expect(outcome.before > 0, "/proc/self/statm unreadable")
        #expect(growth <= Self.bound, "resident set grew by \(growth) bytes over \(count) objects")
    }
}

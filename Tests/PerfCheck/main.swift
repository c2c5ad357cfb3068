// PerfCheck — fixed-iteration fixtures of SwiftKVO's hot operations, run by
// `make perf-check` (perf_check.py) under callgrind to count instructions and
// heap allocations per operation. See README.md.
//
//     PerfCheck FIXTURE ITERATIONS [LAYOUT]
//                                      set up FIXTURE, warm it up, run ITERATIONS
//                                      operations inside perfcheck_measure, print
//                                      "allocations=A callbacks=C"; LAYOUT (default 0)
//                                      shifts the heap addresses the fixture gets
//     PerfCheck --list                 every fixture: name, tab, what one operation is
//
// Each fixture sets up outside the measured loop and returns that loop. Every
// callback does the same thing (perfcheck_tick), and the callbacks counted must
// be exactly the operations times `callbacksPerOperation`, so a fixture that
// silently stopped delivering fails instead of looking fast.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPerfCheck

/// Runs `loop(iterations)` inside perfcheck_measure; returns the allocations it made.
func measure(_ loop: @escaping (Int) -> Void, iterations: Int) -> Int {
    final class Box {
        let loop: (Int) -> Void
        init(_ loop: @escaping (Int) -> Void) { self.loop = loop }
    }
    let box = Unmanaged.passRetained(Box(loop))
    defer { box.release() }
    return perfcheck_measure({ context, n in
        Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue().loop(n)
    }, box.toOpaque(), iterations)
}

func fail(_ message: String) -> Never {
    let line = Array("PerfCheck: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(2)
}

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--list" {
    for fixture in Fixture.all { print("\(fixture.name)\t\(fixture.summary)") }
    exit(0)
}
guard (2...3).contains(arguments.count), let iterations = Int(arguments.dropFirst().first!), iterations > 0,
    let layout = Int(arguments.dropFirst(2).first ?? "0"), layout >= 0
else {
    fail("usage: PerfCheck FIXTURE ITERATIONS [LAYOUT] | PerfCheck --list")
}
guard let fixture = Fixture.all.first(where: { $0.name == arguments.first! }) else {
    fail("unknown fixture '\(arguments.first!)'; see PerfCheck --list")
}
// Hashing observed addresses makes some counts depend on where the heap puts the fixture;
// perf_check.py averages over a few layouts, so an unrelated allocation elsewhere cannot
// move a fixture across the threshold. This block stays allocated through the run.
let padding = UnsafeMutableRawPointer.allocate(byteCount: 1 + layout * 80, alignment: 16)
defer { padding.deallocate() }
let loop = fixture.setUp()
// Warm-up: resolve keys, fill caches, start lazily created per-thread state.
loop(100)
_ = perfcheck_take_count()
let allocations = measure(loop, iterations: iterations)
let callbacks = perfcheck_take_count()
let expected = iterations * fixture.callbacksPerOperation
if callbacks != expected {
    fail("\(fixture.name): \(callbacks) callbacks for \(iterations) operations, expected \(expected)")
}
print("allocations=\(allocations) callbacks=\(callbacks)")

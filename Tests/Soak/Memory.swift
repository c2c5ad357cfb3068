// Memory.swift — the resident-set-size check.
//
// RSS is read from /proc/self/statm after the heap is trimmed, twice: after a
// warm-up round has run every workload and been torn down (allocator arenas,
// thread stacks cached by glibc, SwiftKVO's key and key-path registries and the
// engine's per-thread records exist by then), and after the main round has been
// torn down the same way. The two states hold the same things, so growth is
// what the main round left behind.

import CSoakSupport

enum Memory {
    /// The bound on RSS growth between the two measurements.
    ///
    /// 8 MiB: far above the noise (the allocator's free lists and arena
    /// fragmentation move RSS by a few hundred KiB to a few MiB between equal
    /// states), far below any leak of a per-operation size — the main round
    /// makes millions of registrations, removals and dispatches, so leaking
    /// even one small allocation per thousand operations exceeds it.
    static let growthBound = 8 << 20

    /// Whether RSS says anything: not under a sanitizer, whose shadow memory and histories
    /// grow with the work done.
    static var isMeaningful: Bool { !csoak_sanitized() }

    /// The process's resident set size after returning free heap to the system.
    static func residentBytes() -> Int {
        csoak_trim_heap()
        return csoak_resident_bytes()
    }

    /// `bytes` in MiB with one decimal, signed when negative.
    static func mebibytes(_ bytes: Int) -> String {
        let tenths = (abs(bytes) * 10 + (1 << 19)) >> 20
        return "\(bytes < 0 ? "-" : "")\(tenths / 10).\(tenths % 10) MiB"
    }
}

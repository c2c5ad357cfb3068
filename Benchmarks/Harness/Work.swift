// Work.swift — the callback body every Swift peer uses.

import CBenchFloor

/// Stands for the object that observes (a view model, a controller). Swift
/// peers' callbacks capture one, as real callbacks capture `self`.
final class BenchObserver: Sendable {
    init() {}
}

/// The work of one callback: the same `cbench_tick()` the C callbacks do.
/// `withExtendedLifetime` keeps the captured observer in the closure context,
/// so the optimizer cannot turn the closure into a context-free function.
@inline(__always)
func observerDidChange(_ observer: BenchObserver) {
    cbench_tick()
    withExtendedLifetime(observer) {}
}

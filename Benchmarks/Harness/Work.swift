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

/// `observerDidChange`, for a notification callback that also reads the
/// notification's sender (as most real observers do): the read is kept.
@inline(__always)
func observerDidChange<Sender>(_ observer: BenchObserver, sender: Sender) {
    cbench_tick()
    withExtendedLifetime(observer) {}
    withExtendedLifetime(sender) {}
}

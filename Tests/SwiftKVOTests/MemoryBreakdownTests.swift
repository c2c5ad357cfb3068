// The Swift layer's heap blocks per observation, measured (docs/benchmarks.md, "Memory per
// observation, by structure"): each object a registration makes, at its real heap footprint —
// malloc_usable_size plus glibc's 8-byte chunk header — so a field added to a box or a token
// shows here as the 16 bytes it costs once it crosses a size class. The engine's share (record,
// list entry, slot, slot-map bucket, objects-set entry, identity bucket) is measured by
// `make memory-breakdown` (Tools/memory_breakdown.c); the totals by the benchmark's memory rows.

import Foundation
import Testing
@testable import SwiftKVO

private final class Subject: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Subject.value] }
    @Observed var value = 0
}

private final class Listener: Sendable {}

/// glibc's `malloc_usable_size` (declared in <malloc.h>, which Glibc's module map leaves out).
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer) -> Int

/// Footprints are glibc's: a sanitizer's allocator owns the blocks under `make tsan` / `make asan`.
@Suite(
    .disabled(if: MemoryBoundTests.sanitizer != nil, "a sanitizer's allocator, not glibc's"),
    .needsLayout("its registrations"))
struct MemoryBreakdownTests {
    /// The heap footprint of the block holding `object`.
    static func footprint(_ object: AnyObject) -> Int {
        mallocUsableSize(Unmanaged.passUnretained(object).toOpaque()) + MemoryLayout<Int>.size
    }

    @Test func tokenObservationHoldsABoxAndAToken() throws {
        let subject = Subject()
        let listener = Listener()
        let keyPath = Unmanaged.passUnretained(\Subject.value as AnyKeyPath)
        // Several of each, the smallest footprint: malloc may hand one of them a larger free
        // chunk it does not split, which says nothing about the size class.
        let boxes = (0..<8).map { _ in
            HandlerObservation<Subject, Int>(
                unmanagedKeyPath: keyPath, readsInitialValue: true) { [listener] _, _ in withExtendedLifetime(listener) {} }
        }
        let tokens = try (0..<8).map { _ in
            try subject.observe(\.value, options: .new) { [listener] _, _ in withExtendedLifetime(listener) {} }
        }
        let box = boxes.map(Self.footprint).min() ?? 0
        let token = tokens.map(Self.footprint).min() ?? 0
        print("memory-breakdown: token box \(box) B, token \(token) B")
        #expect(box <= 64)
        // A 64-bit generation and a 32-bit index since tokens stopped running out (SPEC §2.22):
        // 28 bytes with the object header, a 48-byte chunk (it was 24, a 32-byte chunk).
        #expect(token <= 48)
        for token in tokens { token.invalidate() }
    }

    @Test func hubRegistrationsHoldABox() throws {
        let listener = Listener()
        // The smallest footprint of several, as above: one block may come from a larger free chunk.
        let observerBoxes = (0..<8).map { _ in
            NotificationHub.makeBox(observer: listener, sender: .init(nil)) { _, _ in }
        }
        let tokenBoxes = (0..<8).map { _ in
            HubTokenObservation(pinnedSender: nil) { [listener] _ in withExtendedLifetime(listener) {} }
        }
        let token = try NotificationHub.default.addObserver(forName: "memory-breakdown") { _ in }
        let observerBox = observerBoxes.map(Self.footprint).min() ?? 0
        let tokenBox = tokenBoxes.map(Self.footprint).min() ?? 0
        print("memory-breakdown: hub observer-form box \(observerBox) B, "
            + "hub token-form box \(tokenBox) B, hub token \(Self.footprint(token)) B")
        // The box keeps its 96-bit token (SelfRemovingObservation): 4 bytes more than before
        // SPEC §2.22 crossed a size class (80 -> 96).
        #expect(observerBox <= 96)
        #expect(tokenBox <= 64)
        token.invalidate()
    }
}

// The two ways Documentation.docc/SharingObjectsAcrossThreads.md shows to declare a class whose
// observed properties change on several threads, compiled in the Swift 6 language mode (complete
// concurrency checking) and run here, so that the article's code cannot rot.
import Foundation
import Synchronization
import Testing
import SwiftKVO

// MARK: Option 1 — writes confined to one global actor

/// The actor every write to a `Feed` happens on.
@globalActor actor Ingest {
    static let shared = Ingest()
}

/// Isolated to `Ingest`: the compiler checks that every write happens there, and the class is
/// `Sendable` without any promise of yours. Observers run on `Ingest`, synchronously, during the
/// write. Register them on `Ingest` too: a key path to an isolated property is formed there.
@Ingest final class Feed: KeyValueObservable {
    nonisolated let kvoRegistrar = KVORegistrar()
    nonisolated static var observableKeyPaths: [String: AnyKeyPath] {
        unsafeIsolatedKeyPaths { @Ingest () -> [String: AnyKeyPath] in ["latest": \Feed.latest] }
    }
    @Observed var latest = 0

    func receive(_ value: Int) { latest = value }

    /// Reports every new value to `report`, which runs on `Ingest`.
    func onChange(_ report: @escaping @Sendable (Int) -> Void) throws(KVOError) -> ObservationToken {
        try observe(\.latest, options: .new) { _, change in report(change.newValue!) }
    }
}

// MARK: Option 2 — writes from any thread, serialized by a lock

/// Written from any thread: every write takes `lock` and keeps it while the observers run, so
/// changes reach them one at a time, in the order of the writes, each with the value it replaced.
/// `@unchecked Sendable` is your promise that every access to the stored properties holds the
/// lock: the compiler no longer checks it.
///
/// The price: observers run under the lock, so an observer that writes to the same meter
/// deadlocks (the lock is not recursive), and a slow observer holds up every writer.
///
/// `NSLock` rather than Synchronization's `Mutex`: both work, but on Linux ThreadSanitizer does
/// not see `Mutex` (Swift 6.3) and reports the writes it orders as races.
final class Meter: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["total": \Meter.total] }
    @Observed private(set) var total = 0
    private let lock = NSLock()

    func add(_ amount: Int) {
        lock.withLock { total += amount }
    }

    /// The current total, read under the lock: a write may be under way on another thread.
    var current: Int {
        lock.withLock { total }
    }
}

@Suite(.needsLayout("its registrations")) struct SharedAcrossThreadsTests {
    @Test func anActorConfinedClassNotifiesOnItsActor() async throws {
        let feed = Feed()
        let received = Atomic<Int>(0)
        let outOfOrder = Atomic<Int>(0)
        let token = try await feed.onChange { value in
            Ingest.shared.assertIsolated()
            if value != received.load(ordering: .relaxed) + 1 { outOfOrder.add(1, ordering: .relaxed) }
            received.add(1, ordering: .relaxed)
        }
        for value in 1...3 { await feed.receive(value) }
        #expect(received.load(ordering: .relaxed) == 3)
        #expect(outOfOrder.load(ordering: .relaxed) == 0)
        token.invalidate()
    }

    @Test func aLockedClassWrittenFromManyThreadsNotifiesOneChangeAtATime() async throws {
        let meter = Meter()
        let changes = Atomic<Int>(0)
        let outOfOrder = Atomic<Int>(0)
        let token = try meter.observe(\.total, options: [.old, .new]) { _, change in
            if change.newValue! != change.oldValue! + 1 { outOfOrder.add(1, ordering: .relaxed) }
            changes.add(1, ordering: .relaxed)
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask { for _ in 0..<500 { meter.add(1) } }
            }
        }
        #expect(meter.current == 2_000)
        #expect(changes.load(ordering: .relaxed) == 2_000)
        #expect(outOfOrder.load(ordering: .relaxed) == 0)
        token.invalidate()
    }
}

@MainActor final class MainActorBadge: KeyValueObservable {
    nonisolated let kvoRegistrar = KVORegistrar()
    nonisolated static var observableKeyPaths: [String: AnyKeyPath] {
        unsafeIsolatedKeyPaths { @MainActor () -> [String: AnyKeyPath] in ["count": \MainActorBadge.count] }
    }
    @Observed var count = 0
    func table() -> [String: AnyKeyPath] { [:] }
    nonisolated static func staticTable() -> [String: AnyKeyPath] { [:] }
}

extension SharedAcrossThreadsTests {
    @Test func anIsolatedTableIsFormedOnAnyThread() async {
        func described(_ table: [String: AnyKeyPath]) -> [String] {
            table.map { "\($0.key): \(type(of: $0.value).rootType) → \(type(of: $0.value).valueType)" }
        }
        let names = await Task.detached { (described(MainActorBadge.observableKeyPaths), described(Feed.observableKeyPaths)) }.value
        #expect(names.0 == ["count: MainActorBadge → Int"])
        #expect(names.1 == ["latest: Feed → Int"])
    }

    @Test func anIsolatedTableOfAnyOtherFormIsEmptyNotACrash() {
        // The dictionary literal typed by inference, not [String: AnyKeyPath].
        #expect(Feed.unsafeIsolatedKeyPaths({ @Ingest in ["latest": \Feed.latest] }).isEmpty)
        // Sixteen bytes that are no closure.
        #expect(Feed.unsafeIsolatedKeyPaths((1, 2)).isEmpty)
        #expect(Feed.unsafeIsolatedKeyPaths({ @Ingest () async -> [String: AnyKeyPath] in [:] }).isEmpty)
        #expect(Feed.unsafeIsolatedKeyPaths({ () -> [String: AnyKeyPath] in [:] }).isEmpty)
        // Functions whose result is such a closure: called as one, they would
        // write a closure where the table goes.
        #expect(MainActorBadge.unsafeIsolatedKeyPaths(MainActorBadge.table).isEmpty)
        #expect(MainActorBadge.unsafeIsolatedKeyPaths({ @MainActor in MainActorBadge.staticTable }).isEmpty)
    }
}

// The two ways Documentation.docc/SharingObjectsAcrossThreads.md shows to declare a class whose
// observed properties change on several threads, compiled in the Swift 6 language mode (complete
// concurrency checking) and run here, so that the article's code cannot rot.
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
    @Observed var latest = 0

    func receive(_ value: Int) { latest = value }

    /// Reports every new value to `report`, which runs on `Ingest`.
    func onChange(_ report: @escaping @Sendable (Int) -> Void) -> ObservationToken {
        observe(\.latest, options: .new) { _, change in report(change.newValue!) }
    }
}

// MARK: Option 2 — writes from any thread, serialized by a lock

/// Written from any thread: every write takes `lock` and keeps it while the observers run, so
/// changes reach them one at a time, in the order of the writes, each with the value it replaced.
/// `@unchecked Sendable` is your promise that every access to the stored properties holds the
/// lock: the compiler no longer checks it.
///
/// The price: observers run under the lock, so an observer that writes to the same meter
/// deadlocks (`Mutex` is not recursive), and a slow observer holds up every writer.
final class Meter: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed private(set) var total = 0
    private let lock = Mutex(())

    func add(_ amount: Int) {
        lock.withLock { _ in total += amount }
    }

    /// The current total, read under the lock: a write may be under way on another thread.
    var current: Int {
        lock.withLock { _ in total }
    }
}

@Suite struct SharedAcrossThreadsTests {
    @Test func anActorConfinedClassNotifiesOnItsActor() async {
        let feed = Feed()
        let received = Mutex<[Int]>([])
        let token = await feed.onChange { value in
            Ingest.shared.assertIsolated()
            received.withLock { $0.append(value) }
        }
        await feed.receive(1)
        await feed.receive(2)
        #expect(received.withLock { $0 } == [1, 2])
        token.invalidate()
    }

    @Test func aLockedClassWrittenFromManyThreadsNotifiesOneChangeAtATime() async {
        let meter = Meter()
        let changes = Atomic<Int>(0)
        let outOfOrder = Atomic<Int>(0)
        let token = meter.observe(\.total, options: [.old, .new]) { _, change in
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

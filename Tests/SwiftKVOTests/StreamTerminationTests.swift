import Synchronization
import Testing
@testable import SwiftKVO

/// When an async sequence of SwiftKVO ends, and what it lets go of then: a
/// server's consumer (an SSE route) ends by task cancellation or by leaving
/// its loop, and must not keep its observation, or buffered values, until
/// the object dies — a shared object never does.
@Suite(.needsLayout("its registrations")) struct StreamTerminationTests {
    /// A consumer cancelled while busy in its loop body gets no more
    /// elements, even with values buffered: its next `next()` ends the
    /// sequence and removes the observation.
    @Test func cancellationEndsTheValuesSequenceWithoutDeliveringBufferedValues() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.values(for: \.level, bufferingPolicy: .unbounded)
        let consumer = Task {
            var afterCancellation: [Int] = []
            var cancelled = false
            for await level in stream {
                if cancelled { afterCancellation.append(level); continue }
                // Busy in the body: these changes are buffered.
                for next in 1...5 { gauge.level = next }
                withUnsafeCurrentTask { $0?.cancel() }
                cancelled = true
            }
            return afterCancellation
        }
        let afterCancellation = await consumer.value
        #expect(afterCancellation == [])
        #expect(gauge.observations.isEmpty)
    }

    /// The same for named notifications.
    @Test func cancellationEndsTheNotificationsSequenceWithoutDeliveringBufferedNotes() async throws {
        let name = NotificationHub.Name("test.cancellationEndsTheNotificationsSequenceWithoutDeliveringBufferedNotes")
        let stream = try NotificationHub.default.notifications(named: name, bufferingPolicy: .unbounded)
        NotificationHub.default.post(name: name)
        let consumer = Task {
            var afterCancellation = 0
            var cancelled = false
            for await _ in stream {
                if cancelled { afterCancellation += 1; continue }
                for _ in 1...5 { NotificationHub.default.post(name: name) }
                withUnsafeCurrentTask { $0?.cancel() }
                cancelled = true
            }
            return afterCancellation
        }
        #expect(await consumer.value == 0)
        #expect(!Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)))
    }

    /// Values buffered for a consumer that leaves its loop are released
    /// then, not when the last copy of the sequence goes (here the test
    /// keeps one to the end), and no more are buffered after.
    @Test func leavingTheLoopReleasesBufferedValuesWhileTheSequenceIsStillHeld() async throws {
        let live = LiveCount()
        let shelf = PayloadShelf(Payload(live))
        let stream = try shelf.values(for: \.payload, bufferingPolicy: .unbounded)
        for await _ in stream {
            for _ in 1...3 { shelf.payload = Payload(live) }  // buffered
            break
        }
        shelf.payload = Payload(live)  // after the loop: buffered by nothing
        // Only the shelf's current payload may stay alive.
        #expect(await eventually(seconds: 10) { live.count == 1 })
        #expect(live.count == 1)
        withExtendedLifetime(stream) {}
    }

    /// Leaving the loop (`break`, `return`, a thrown write to a closed
    /// connection) ends the observation at once, even while the sequence
    /// value itself is still referenced — not at the next change, nor when
    /// the object dies.
    @Test func leavingTheValuesLoopRemovesTheObservationWhileTheSequenceIsStillHeld() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.values(for: \.level)
        for await _ in stream { break }
        #expect(gauge.observations.isEmpty)
        withExtendedLifetime(stream) {}
    }

    /// The same for named notifications.
    @Test func leavingTheNotificationsLoopRemovesTheRegistrationWhileTheSequenceIsStillHeld() async throws {
        let name = NotificationHub.Name("test.leavingTheNotificationsLoopRemovesTheRegistration")
        let stream = try NotificationHub.default.notifications(named: name)
        NotificationHub.default.post(name: name)
        for await _ in stream { break }
        #expect(!Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)))
        withExtendedLifetime(stream) {}
    }

    /// A shared object (never freed) under a writer on another thread: every
    /// consumer that is cancelled ends, and leaves no observation, however
    /// its cancellation falls among the changes. (One writer, and consumers
    /// that read no value at registration: a stored value is not atomic.)
    @Test func consumersOfASharedObjectEndOnCancellationAmidConcurrentChanges() async throws {
        let gauge = StreamGauge()
        let writing = LiveCount()
        writing.add(1)
        let writer = Task.detached {
            var next = 0
            while writing.count > 0 {
                next += 1
                gauge.level = next
                if next % 64 == 0 { await Task.yield() }
            }
        }
        for round in 0..<50 {
            let consumer = Task {
                var received = 0
                let policy = ObservationBufferingPolicy.bufferingNewest(round % 4 + 1)
                for await _ in try gauge.changes(for: \.level, options: .new, bufferingPolicy: policy) {
                    received += 1
                }
                return received
            }
            if round % 2 == 0 { await Task.yield() }
            consumer.cancel()
            _ = try await consumer.value
        }
        writing.add(-1)
        await writer.value
        #expect(gauge.observations.isEmpty)
    }

    /// Values cross from one changing thread to the consumer in order,
    /// none lost, with an unbounded buffer.
    @Test func valuesFromAnotherThreadArriveInOrderWithAnUnboundedBuffer() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.values(for: \.level, bufferingPolicy: .unbounded)
        let writer = Task.detached {
            for next in 1...10_000 { gauge.level = next }
        }
        var expected = 0
        var inOrder = true
        for await level in stream {
            if level != expected { inOrder = false; break }
            if level == 10_000 { break }
            expected += 1
        }
        await writer.value
        #expect(inOrder)
        #expect(expected == 10_000)
    }
}

// MARK: - Helpers

/// Observable classes of this suite's own, so that their observations are
/// this suite's alone.
final class StreamGauge: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["level": \StreamGauge.level, "stock": \StreamGauge.stock, "lines": \StreamGauge.lines] }
    @Observed var level = 0
    @Observed var stock: [String: Int] = [:]
    @ObservedArray var lines: [String] = []
}

/// Counts live ``Payload``s.
final class LiveCount: Sendable {
    private let live = Atomic<Int>(0)
    var count: Int { live.load(ordering: .acquiring) }
    func add(_ delta: Int) { live.add(delta, ordering: .acquiringAndReleasing) }
}

/// A value whose deinit proves it was released.
final class Payload: Sendable {
    let live: LiveCount
    init(_ live: LiveCount) {
        self.live = live
        live.add(1)
    }
    deinit { live.add(-1) }
}

final class PayloadShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["payload": \PayloadShelf.payload] }
    @Observed var payload: Payload
    init(_ payload: Payload) { self.payload = payload }
}

/// Waits, yielding, until `condition` holds or `seconds` passed: a liveness
/// bound, never a timing threshold.
func eventually(seconds: Double, _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

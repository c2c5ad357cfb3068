import Testing
@testable import SwiftKVO

/// `changes(for:)`: what changed (old and new, kind, indexes), as a server
/// forwards it, and when the sequence lets its observation go.
@Suite(.needsLayout("its registrations")) struct ObservedChangesTests {
    /// The first element is the current value (a snapshot); each later one
    /// carries old and new, so a consumer can tell which dictionary key changed.
    @Test func changesStartWithTheCurrentValueThenCarryOldAndNewValues() async throws {
        let gauge = StreamGauge()
        gauge.stock = ["sku-1": 3, "sku-2": 5]
        var changes = try gauge.changes(for: \.stock).makeAsyncIterator()
        let initial = await changes.next()
        #expect(initial?.isInitial == true)
        #expect(initial?.kind == .setting)
        #expect(initial?.newValue == ["sku-1": 3, "sku-2": 5])
        #expect(initial?.oldValue == nil)

        gauge.stock["sku-2"] = 4
        let change = try #require(await changes.next())
        #expect(!change.isInitial)
        #expect(change.kind == .setting)
        let old = change.oldValue ?? [:]
        let new = change.newValue ?? [:]
        let changedKeys = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }
        #expect(changedKeys == ["sku-2"])
    }

    /// An array's changes carry their kind and indexes, and the affected elements.
    @Test func arrayChangesCarryKindAndIndexes() async throws {
        let gauge = StreamGauge()
        gauge.lines = ["a", "b"]
        var changes = try gauge.changes(for: \.lines, options: [.old, .new]).makeAsyncIterator()
        gauge.mutableArray(\.lines).append("c")
        gauge.mutableArray(\.lines).remove(at: 0)
        let insertion = try #require(await changes.next())
        #expect(insertion.kind == .insertion)
        #expect(insertion.indexes == [2])
        #expect(insertion.newValue == ["c"])
        let removal = try #require(await changes.next())
        #expect(removal.kind == .removal)
        #expect(removal.indexes == [0])
        #expect(removal.oldValue == ["a"])
    }

    /// The sequence ends when the object dies, after what was buffered.
    @Test func changesEndWhenTheObjectDiesAfterTheBufferedChanges() async throws {
        var gauge: StreamGauge? = StreamGauge()
        let stream = try gauge!.changes(for: \.level, options: .new)
        gauge!.level = 1
        gauge!.level = 2
        gauge = nil
        var received: [Int?] = []
        for await change in stream { received.append(change.newValue) }
        #expect(received == [1, 2])
    }

    /// Cancelling a consumer that waits for a change removes the observation
    /// inside `cancel()`, before it returns; no change made after reaches the
    /// observation's handler; and the consumer's loop ends.
    @Test func cancellingAWaitingConsumerRemovesTheObservationBeforeCancelReturns() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.changes(for: \.level)
        let consumer = Task {
            var received = 0
            for await _ in stream { received += 1 }
            return received
        }
        #expect(await eventually(seconds: 10) { stream.stream.isAwaitingElement })
        consumer.cancel()
        #expect(gauge.observations.isEmpty)
        for next in 1...100 { gauge.level = next }
        #expect(stream.stream.refusedAfterEnd == 0)
        #expect(await consumer.value == 1)  // the initial change only
    }

    /// The same for `values(for:)`, whose object is shared and never dies.
    @Test func cancellingAWaitingValuesConsumerRemovesTheObservationBeforeCancelReturns() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.values(for: \.level)
        let consumer = Task { for await _ in stream {} }
        #expect(await eventually(seconds: 10) { stream.stream.isAwaitingElement })
        consumer.cancel()
        #expect(gauge.observations.isEmpty)
        for next in 1...100 { gauge.level = next }
        #expect(stream.stream.refusedAfterEnd == 0)
        await consumer.value
    }

    /// The same for named notifications.
    @Test func cancellingAWaitingNotificationsConsumerRemovesTheRegistrationBeforeCancelReturns() async throws {
        let name = NotificationHub.Name("test.cancellingAWaitingNotificationsConsumerRemovesTheRegistration")
        let stream = try NotificationHub.default.notifications(named: name)
        let consumer = Task { for await _ in stream {} }
        #expect(await eventually(seconds: 10) { stream.stream.isAwaitingElement })
        consumer.cancel()
        #expect(!Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)))
        for _ in 1...100 { NotificationHub.default.post(name: name) }
        #expect(stream.stream.refusedAfterEnd == 0)
        await consumer.value
    }

    /// A consumer busy in its body when cancelled receives none of the
    /// changes buffered meanwhile.
    @Test func cancellationEndsTheChangesSequenceWithoutDeliveringBufferedChanges() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.changes(for: \.level)
        let consumer = Task {
            var afterCancellation = 0
            var cancelled = false
            for await _ in stream {
                if cancelled { afterCancellation += 1; continue }
                for next in 1...5 { gauge.level = next }
                withUnsafeCurrentTask { $0?.cancel() }
                cancelled = true
            }
            return afterCancellation
        }
        #expect(await consumer.value == 0)
        #expect(gauge.observations.isEmpty)
    }

    /// Leaving the loop removes the observation and releases what was
    /// buffered, while the sequence is still held.
    @Test func leavingTheChangesLoopRemovesTheObservationAndReleasesBufferedChanges() async throws {
        let live = LiveCount()
        let shelf = PayloadShelf(Payload(live))
        let stream = try shelf.changes(for: \.payload)
        for await _ in stream {
            for _ in 1...3 { shelf.payload = Payload(live) }
            break
        }
        #expect(shelf.observations.isEmpty)
        shelf.payload = Payload(live)
        #expect(await eventually(seconds: 10) { live.count == 1 })
        withExtendedLifetime(stream) {}
    }

    /// Dropping a sequence never iterated removes the observation.
    @Test func discardingAChangesSequenceRemovesTheObservation() throws {
        let gauge = StreamGauge()
        do {
            let stream = try gauge.changes(for: \.level)
            #expect(!gauge.observations.isEmpty)
            _ = stream
        }
        #expect(gauge.observations.isEmpty)
    }

    /// The sequence is iterated once: a second iterator ends at once.
    @Test func aSecondIteratorEndsAtOnce() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.changes(for: \.level)
        var first = stream.makeAsyncIterator()
        var second = stream.makeAsyncIterator()
        #expect(await second.next() == nil)
        #expect(await first.next()?.isInitial == true)
    }

    /// By default the newest 1,000 changes wait for a slow consumer; older
    /// ones are dropped.
    @Test func changesKeepTheNewestThousandByDefault() async throws {
        let gauge = StreamGauge()
        let stream = try gauge.changes(for: \.level)
        for next in 1...1_100 { gauge.level = next }  // after the initial change
        var received: [ObservedChange<Int>] = []
        for await change in stream {
            received.append(change)
            if change.newValue == 1_100 { break }
        }
        #expect(received.count == 1_000)
        #expect(received.first?.oldValue == 100)
        #expect(received.first?.newValue == 101)
        #expect(!received.contains { $0.isInitial })
    }

    /// Changes cross to a consumer on the main actor, in order.
    @MainActor
    @Test func mainActorConsumerReceivesChangesOnTheMainActor() async throws {
        let gauge = StreamGauge()
        var received: [Int?] = []
        for await change in try gauge.changes(for: \.level, options: [.initial, .new]) {
            MainActor.assertIsolated()
            received.append(change.newValue)
            if received.count == 1 { gauge.level = 7 }
            if received.count == 2 { break }
        }
        #expect(received == [0, 7])
    }
}

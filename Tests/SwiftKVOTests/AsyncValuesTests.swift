import Testing
@testable import SwiftKVO

@Suite(.needsLayout("its registrations")) struct AsyncValuesTests {
    @Test func valuesStartWithTheCurrentValueThenFollowChanges() async throws {
        let account = Account(name: "a")
        let stream = try account.values(for: \.name, bufferingPolicy: .unbounded)
        account.name = "b"
        account.name = "c"
        var received: [String] = []
        for await name in stream {
            received.append(name)
            if received.count == 3 { break }
        }
        #expect(received == ["a", "b", "c"])
    }

    @Test func valuesEndWhenTheObjectDies() async throws {
        var account: Account? = Account(name: "a")
        let stream = try account!.values(for: \.name, bufferingPolicy: .unbounded)
        account!.name = "b"
        account = nil
        var received: [String] = []
        for await name in stream { received.append(name) }
        #expect(received == ["a", "b"])
    }

    @Test func cancellingTheConsumerRemovesTheObservation() async throws {
        let gauge = CancellationGauge()
        if refusedWithoutLayout({ _ = try gauge.values(for: \.level) }) { return }
        let task = Task {
            for await _ in try! gauge.values(for: \.level) {}
        }
        #expect(await eventually { gauge.isObserved })
        task.cancel()
        await task.value
        #expect(!gauge.isObserved)
        gauge.level = 1  // nothing observes it anymore
    }

    @Test func discardingTheSequenceRemovesTheObservation() throws {
        let gauge = DiscardGauge()
        do {
            let stream = try gauge.values(for: \.level)
            #expect(gauge.isObserved)
            _ = stream
        }
        #expect(!gauge.isObserved)
    }

    @Test func cancellingANotificationConsumerRemovesTheRegistration() async throws {
        let name = NotificationHub.Name("test.cancellingANotificationConsumerRemovesTheRegistration")
        let task = Task {
            for await _ in try! NotificationHub.default.notifications(named: name) {}
        }
        #expect(await eventually { Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)) })
        task.cancel()
        await task.value
        #expect(!Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)))
    }

    @Test func discardingANotificationSequenceRemovesTheRegistration() throws {
        let name = NotificationHub.Name("test.discardingANotificationSequenceRemovesTheRegistration")
        do {
            let stream = try NotificationHub.default.notifications(named: name)
            #expect(Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)))
            _ = stream
        }
        #expect(!Engine.hasObservers(Engine.probe(of: name.keyIfEverObserved)))
    }

    @Test func notificationsArriveAsAnAsyncSequence() async throws {
        let name = NotificationHub.Name("test.notificationsArriveAsAnAsyncSequence")
        let stream = try NotificationHub.default.notifications(named: name)
        NotificationHub.default.post(name: name, userInfo: ["n": 1])
        NotificationHub.default.post(name: name, userInfo: ["n": 2])
        var received: [Int] = []
        for await note in stream {
            received.append(note.userInfo["n"] as? Int ?? 0)
            if received.count == 2 { break }
        }
        #expect(received == [1, 2])
    }

    @Test func notificationsFromAnObservableSenderEndWhenItDies() async throws {
        let name = NotificationHub.Name("test.notificationsFromAnObservableSenderEndWhenItDies")
        var account: Account? = Account()
        let stream = try NotificationHub.default.notifications(named: name, object: account)
        NotificationHub.default.post(name: name, object: account)
        account = nil
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 1)
    }

    @MainActor
    @Test func mainActorConsumerReceivesValuesOnTheMainActor() async throws {
        let account = Account(name: "x")
        var received: [String] = []
        for await name in try account.values(for: \.name) {
            MainActor.assertIsolated()
            received.append(name)
            if received.count == 1 { break }
        }
        #expect(received == ["x"])
    }

    @Test func valuesStreamEndsWhenObjectDies() async throws {
        var owner: AtkOwner? = AtkOwner()
        let stream = try owner!.values(for: \.label, bufferingPolicy: .unbounded)
        owner!.label = "a"
        owner = nil
        var seen: [String] = []
        for await v in stream { seen.append(v) }
        #expect(seen == ["", "a"])
    }

    @Test func valuesStreamWithConcurrentDeath() async throws {
        for _ in 0..<100 {
            var owner: AtkOwner? = AtkOwner()
            let stream = try owner!.values(for: \.label)
            let o = owner!
            owner = nil
            let writer = Task.detached { for i in 0..<50 { o.label = "\(i)" } }
            await writer.value
            _ = o
            var count = 0
            let reader = Task { for await _ in stream { count += 1; if count > 1000 { break } }; return count }
            // o is released when this iteration ends; the stream must finish.
            _ = reader
        }
    }
}

/// Waits (yielding, for at most about a second) until `condition` holds.
private func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<1_000 {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    return condition()
}

/// Observable classes of their own, so that whether their key is observed
/// anywhere in the process says whether this suite's observation exists.
private final class CancellationGauge: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["level": \CancellationGauge.level] }
    @Observed var level = 0
    var isObserved: Bool { isObservedAnywhere(\CancellationGauge.level, on: self) }
}

private final class DiscardGauge: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["level": \DiscardGauge.level] }
    @Observed var level = 0
    var isObserved: Bool { isObservedAnywhere(\DiscardGauge.level, on: self) }
}

/// Whether the property `keyPath` names is observed on any object.
private func isObservedAnywhere<Root: KeyValueObservable, Value>(
    _ keyPath: KeyPath<Root, Value>, on object: Root
) -> Bool {
    Engine.hasObservers(Engine.probe(of: try! KeyPathRegistry.resolve(keyPath, on: object).key))
}

// MARK: - Collections (issue #19 item 2)

/// An `@ObservedArray` of its own, and a holder to reach it through a chain.
private final class Mailbox: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["messages": \Mailbox.messages] }
    @ObservedArray var messages: [String]
    init(_ messages: [String]) { self.messages = messages }
}

private final class PostOffice: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["mailbox": \PostOffice.mailbox] }
    @Observed var mailbox: Mailbox
    init(_ mailbox: Mailbox) { self.mailbox = mailbox }
}

extension AsyncValuesTests {
    /// Every element of an array sequence is the whole array as it stands after
    /// a change — never the inserted or replaced elements alone — and removals
    /// yield too. (Before: `["m1","m2"], ["m3"], ["M1"], ["x"]`: fragments, and
    /// nothing for the two removals.)
    @Test func arrayValuesYieldTheWholeArrayAfterEveryChangeIncludingRemovals() async throws {
        var mailbox: Mailbox? = Mailbox(["m1", "m2"])
        let stream = try mailbox!.values(for: \.messages, bufferingPolicy: .unbounded)
        do {
            let mutator = mailbox!.mutableArray(\.messages)  // holds the mailbox while it lives
            mutator.append("m3")
            mutator.replace(at: 0, with: "M1")
            mutator.remove(at: 1)
            mutator.removeAll()
        }
        mailbox!.messages = ["x"]
        mailbox = nil  // ends the sequence
        var received: [[String]] = []
        for await messages in stream { received.append(messages) }
        #expect(received == [["m1", "m2"], ["m1", "m2", "m3"], ["M1", "m2", "m3"], ["M1", "m3"], [], ["x"]])
    }

    /// The same through a key-path chain whose leaf is an `@ObservedArray`.
    @Test func arrayValuesThroughAChainYieldTheWholeArrayAfterEveryChange() async throws {
        var office: PostOffice? = PostOffice(Mailbox(["a"]))
        let stream = try office!.values(for: \.mailbox.messages, bufferingPolicy: .unbounded)
        office!.mailbox.mutableArray(\.messages).append("b")
        office!.mailbox.mutableArray(\.messages).remove(at: 0)
        office!.mailbox = Mailbox(["c"])
        office = nil
        var received: [[String]] = []
        for await messages in stream { received.append(messages) }
        #expect(received == [["a"], ["a", "b"], ["b"], ["c"]])
    }

    /// Manual to-many announcements yield the whole array too.
    @Test func arrayValuesAfterManualCollectionNotificationsAreWholeArrays() async throws {
        var mailbox: Mailbox? = Mailbox(["a", "b"])
        let stream = try mailbox!.values(for: \.messages, bufferingPolicy: .unbounded)
        mailbox!.willChange(.removal, at: [0], for: \.messages)
        mailbox!.didChange(.removal, at: [0], for: \.messages)
        mailbox = nil
        var received: [[String]] = []
        for await messages in stream { received.append(messages) }
        #expect(received == [["a", "b"], ["a", "b"]])
    }
}

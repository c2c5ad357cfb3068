import Testing
@testable import SwiftKVO

@Suite struct AsyncValuesTests {
    @Test func valuesStartWithTheCurrentValueThenFollowChanges() async {
        let account = Account(name: "a")
        let stream = account.values(for: \.name)
        account.name = "b"
        account.name = "c"
        var received: [String] = []
        for await name in stream {
            received.append(name)
            if received.count == 3 { break }
        }
        #expect(received == ["a", "b", "c"])
    }

    @Test func valuesEndWhenTheObjectDies() async {
        var account: Account? = Account(name: "a")
        let stream = account!.values(for: \.name)
        account!.name = "b"
        account = nil
        var received: [String] = []
        for await name in stream { received.append(name) }
        #expect(received == ["a", "b"])
    }

    @Test func cancellingTheConsumerRemovesTheObservation() async {
        let account = Account()
        let released = Counter()
        let task = Task {
            var count = 0
            for await _ in account.values(for: \.balance) { count += 1 }
            return count
        }
        try? await Task.sleep(nanoseconds: 10_000_000)
        task.cancel()
        _ = await task.value
        account.balance = 1  // nothing observes it anymore; must not crash
        _ = released
    }

    @Test func notificationsArriveAsAnAsyncSequence() async {
        let name = NotificationHub.Name("test.notificationsArriveAsAnAsyncSequence")
        let stream = NotificationHub.default.notifications(named: name)
        NotificationHub.default.post(name: name, userInfo: ["n": 1])
        NotificationHub.default.post(name: name, userInfo: ["n": 2])
        var received: [Int] = []
        for await note in stream {
            received.append(note.userInfo["n"] as? Int ?? 0)
            if received.count == 2 { break }
        }
        #expect(received == [1, 2])
    }

    @Test func notificationsFromAnObservableSenderEndWhenItDies() async {
        let name = NotificationHub.Name("test.notificationsFromAnObservableSenderEndWhenItDies")
        var account: Account? = Account()
        let stream = NotificationHub.default.notifications(named: name, object: account)
        NotificationHub.default.post(name: name, object: account)
        account = nil
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 1)
    }

    @MainActor
    @Test func mainActorConsumerReceivesValuesOnTheMainActor() async {
        let account = Account(name: "x")
        var received: [String] = []
        for await name in account.values(for: \.name) {
            MainActor.assertIsolated()
            received.append(name)
            if received.count == 1 { break }
        }
        #expect(received == ["x"])
    }
}

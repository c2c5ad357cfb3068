import Testing
@testable import SwiftKVO

/// How much an async sequence keeps for a consumer that does not keep up,
/// by default and as asked: a server with a slow client must not grow
/// without bound.
@Suite(.needsLayout("its registrations")) struct StreamBufferingTests {
    /// `values(for:)` keeps the newest value only: a later whole value
    /// supersedes the ones a slow consumer had not taken.
    @Test func valuesKeepOnlyTheNewestValueByDefault() async throws {
        let gauge = StreamGauge()
        var values = try gauge.values(for: \.level).makeAsyncIterator()
        for next in 1...100 { gauge.level = next }
        #expect(await values.next() == 100)
        gauge.level = 101
        gauge.level = 102
        #expect(await values.next() == 102)
    }

    /// `notifications(named:)` keeps the newest 1,000 notifications: the
    /// oldest are dropped beyond that.
    @Test func notificationsKeepTheNewestThousandByDefault() async throws {
        let name = NotificationHub.Name("test.notificationsKeepTheNewestThousandByDefault")
        let stream = try NotificationHub.default.notifications(named: name)
        for n in 0..<1_005 { NotificationHub.default.post(name: name, userInfo: ["n": n]) }
        var received: [Int] = []
        for await note in stream {
            received.append(note.userInfo["n"] as? Int ?? -1)
            if received.last == 1_004 { break }
        }
        #expect(received.count == 1_000)
        #expect(received.first == 5)
    }

    /// An explicit policy is kept: the oldest two.
    @Test func bufferingOldestKeepsTheFirstValuesAndDropsLaterOnes() async throws {
        let gauge = StreamGauge()
        var values = try gauge.values(for: \.level, bufferingPolicy: .bufferingOldest(2)).makeAsyncIterator()
        for next in 1...10 { gauge.level = next }  // 0 and 1 are kept
        #expect(await values.next() == 0)
        #expect(await values.next() == 1)
        gauge.level = 11
        #expect(await values.next() == 11)
    }

    /// An explicit policy is kept: the newest three.
    @Test func bufferingNewestKeepsTheLastValues() async throws {
        let gauge = StreamGauge()
        var values = try gauge.values(for: \.level, bufferingPolicy: .bufferingNewest(3)).makeAsyncIterator()
        for next in 1...10 { gauge.level = next }
        #expect(await values.next() == 8)
        #expect(await values.next() == 9)
        #expect(await values.next() == 10)
    }

    /// Unbounded keeps everything.
    @Test func unboundedKeepsEveryValue() async throws {
        let gauge = StreamGauge()
        var values = try gauge.values(for: \.level, bufferingPolicy: .unbounded).makeAsyncIterator()
        for next in 1...2_000 { gauge.level = next }
        for expected in 0...2_000 {
            guard await values.next() == expected else {
                Issue.record("value \(expected) missing")
                return
            }
        }
    }
}

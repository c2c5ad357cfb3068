import Foundation
import Testing
@testable import SwiftKVO

#if canImport(Glibc)
import Glibc
#endif

/// Thread safety with exactly-once accounting. Workers start together (a
/// barrier) and contend on purpose; `SWIFTKVO_LONG_TESTS=1` runs them longer.
@Suite struct ConcurrencyTests {
    static let scale = getenv("SWIFTKVO_LONG_TESTS") != nil ? 20 : 1

    @Test func concurrentSettersDeliverEachChangeExactlyOnce() {
        let threads = 4
        let changes = 2_000 * Self.scale
        let accounts = (0..<threads).map { _ in Account() }
        let counters = (0..<threads).map { _ in Counter() }
        let shared = Counter()
        var tokens: [ObservationToken] = []
        for (index, account) in accounts.enumerated() {
            let counter = counters[index]
            tokens.append(account.observe(\.balance, options: [.old, .new]) { _, change in
                #expect(change.newValue! == change.oldValue! + 1)
                counter.increment()
            })
            tokens.append(account.observe(\.balance) { _, _ in shared.increment() })
        }
        runConcurrently(threads) { index in
            let account = accounts[index]
            for _ in 0..<changes { account.balance += 1 }
        }
        #expect(counters.map(\.count) == Array(repeating: changes, count: threads))
        #expect(shared.count == threads * changes)
        tokens.forEach { $0.invalidate() }
    }

    @Test func concurrentNotificationsOfOneKeyReachEveryObserverExactlyOnce() {
        let threads = 4
        let changes = 2_000 * Self.scale
        let account = Account(name: "shared")
        let counters = (0..<8).map { _ in Counter() }
        let tokens = counters.map { counter in
            account.observe(\.name, options: .new) { _, change in
                #expect(change.newValue == "shared")
                counter.increment()
            }
        }
        runConcurrently(threads) { _ in
            for _ in 0..<changes {
                account.willChangeValue(for: \.name)
                account.didChangeValue(for: \.name)
            }
        }
        #expect(counters.map(\.count) == Array(repeating: threads * changes, count: 8))
        tokens.forEach { $0.invalidate() }
    }

    @Test func observersAddedAndRemovedFromManyThreadsAreReleasedExactlyOnce() {
        let threads = 4
        let rounds = 500 * Self.scale
        let account = Account()
        let registered = Counter()
        let released = Counter()
        let stop = Counter()
        let notifier = Thread {
            while stop.count == 0 {
                account.willChangeValue(for: \.balance)
                account.didChangeValue(for: \.balance)
            }
        }
        notifier.start()
        runConcurrently(threads) { index in
            for round in 0..<rounds {
                let probe = LifetimeProbe(released)
                let token = account.observe(\.balance, options: round % 3 == 0 ? [.initial] : []) {
                    _, _ in _ = probe
                }
                registered.increment()
                if round % 2 == 0 { token.invalidate() } else { try? token.invalidateAndWait() }
            }
        }
        stop.increment()
        while !notifier.isFinished { sched_yield() }
        flushReleases()
        #expect(released.count == registered.count)
        #expect(registered.count == threads * rounds)
    }

    @Test func controllersAndObserversDyingOnOtherThreadsAreNeverCalledDead() {
        let threads = 4
        let rounds = 300 * Self.scale
        let account = Account()
        let stop = Counter()
        let deadCalls = Counter()
        let notifier = Thread {
            while stop.count == 0 {
                account.willChangeValue(for: \.name)
                account.didChangeValue(for: \.name)
                NotificationHub.default.post(name: "concurrency.dying", object: account)
            }
        }
        notifier.start()
        runConcurrently(threads) { index in
            for round in 0..<rounds {
                let observer = Observer()
                let kvo = KVOController(observer: observer)
                kvo.observe(account, \.name) { observer, _, _ in
                    if observer.log.count < 0 { deadCalls.increment() }  // touches the observer
                }
                NotificationHub.default.addObserver(observer, name: "concurrency.dying", object: account) {
                    observer, _ in _ = observer.log.count
                }
                if round % 2 == 0 { kvo.unobserveAll() }
            }
        }
        stop.increment()
        while !notifier.isFinished { sched_yield() }
        #expect(deadCalls.count == 0)
    }

    @Test func hubPostsFromManyThreadsReachEachObserverExactlyOnce() {
        let threads = 4
        let posts = 1_000 * Self.scale
        let name = NotificationHub.Name("concurrency.posts")
        let observers = (0..<4).map { _ in Observer() }
        let counter = Counter()
        for observer in observers {
            NotificationHub.default.addObserver(observer, name: name) { _, _ in counter.increment() }
        }
        runConcurrently(threads) { _ in
            for _ in 0..<posts { NotificationHub.default.post(name: name, userInfo: ["k": 1]) }
        }
        #expect(counter.count == threads * posts * observers.count)
        observers.forEach { NotificationHub.default.removeObserver($0) }
    }
}

import Foundation
import Synchronization
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

    /// Observers and their controllers die on the registering threads while
    /// another thread keeps notifying: no block ever runs for an observer whose
    /// deinit has begun, and every block (with what it captures) is released
    /// exactly once.
    @Test func controllersAndObserversDyingOnOtherThreadsAreNeverCalledDead() {
        let threads = 4
        let rounds = 300 * Self.scale
        let account = Account()
        let name = NotificationHub.Name("concurrency.dying")
        let stop = Counter()
        let calls = Counter()
        let deadCalls = Counter()
        let released = Counter()
        let notifier = Thread {
            while stop.count == 0 {
                account.willChangeValue(for: \.name)
                account.didChangeValue(for: \.name)
                NotificationHub.default.post(name: name, object: account)
            }
        }
        notifier.start()
        runConcurrently(threads) { _ in
            for round in 0..<rounds {
                let observer = MortalObserver()
                let kvo = KVOController(observer: observer)
                let controllerProbe = LifetimeProbe(released)
                kvo.observe(account, \.name) { observer, _, _ in
                    withExtendedLifetime(controllerProbe) {}
                    calls.increment()
                    if observer.isDeinitializing { deadCalls.increment() }
                }
                let hubProbe = LifetimeProbe(released)
                NotificationHub.default.addObserver(observer, name: name, object: account) { observer, _ in
                    withExtendedLifetime(hubProbe) {}
                    calls.increment()
                    if observer.isDeinitializing { deadCalls.increment() }
                }
                if round == 0 {
                    // Make the notifier overlap the registrations: on a loaded machine it may
                    // otherwise not run before every round is over. A generous deadline for
                    // that event, not a timing threshold.
                    let deadline = ContinuousClock.now + .seconds(30)
                    while calls.count == 0, ContinuousClock.now < deadline { sched_yield() }
                }
                if round % 2 == 0 { kvo.unobserveAll() }
            }  // the observer and its controller die here
        }
        stop.increment()
        while !notifier.isFinished { sched_yield() }
        // One more post meets the hub registrations of observers that died after the last one.
        NotificationHub.default.post(name: name, object: account)
        flushReleases()
        #expect(calls.count > 0)
        #expect(deadCalls.count == 0)
        #expect(released.count == 2 * threads * rounds)
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

/// An observer that records when its deinit begins: a block called with it
/// afterwards would see the flag set (or, under AddressSanitizer, touch freed memory).
private final class MortalObserver: Sendable {
    private let deinitialized = Atomic<Bool>(false)
    var isDeinitializing: Bool { deinitialized.load(ordering: .relaxed) }
    deinit { deinitialized.store(true, ordering: .relaxed) }
}

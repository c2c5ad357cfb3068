import Foundation
import Synchronization
import Testing
@testable import SwiftKVO

#if canImport(Glibc)
import Glibc
#endif

/// Thread safety with exactly-once accounting. Workers start together (a
/// barrier) and contend on purpose; `SWIFTKVO_LONG_TESTS=1` runs them longer.
@Suite(.needsLayout("its registrations")) struct ConcurrencyTests {
    static let scale = getenv("SWIFTKVO_LONG_TESTS") != nil ? 20 : 1

    @Test func concurrentSettersDeliverEachChangeExactlyOnce() throws {
        let threads = 4
        let changes = 2_000 * Self.scale
        let accounts = (0..<threads).map { _ in Account() }
        let counters = (0..<threads).map { _ in Counter() }
        let shared = Counter()
        var tokens: [ObservationToken] = []
        for (index, account) in accounts.enumerated() {
            let counter = counters[index]
            tokens.append(try account.observe(\.balance, options: [.old, .new]) { _, change in
                #expect(change.newValue! == change.oldValue! + 1)
                counter.increment()
            })
            tokens.append(try account.observe(\.balance) { _, _ in shared.increment() })
        }
        runConcurrently(threads) { index in
            let account = accounts[index]
            for _ in 0..<changes { account.balance += 1 }
        }
        #expect(counters.map(\.count) == Array(repeating: changes, count: threads))
        #expect(shared.count == threads * changes)
        tokens.forEach { $0.invalidate() }
    }

    @Test func concurrentNotificationsOfOneKeyReachEveryObserverExactlyOnce() throws {
        let threads = 4
        let changes = 2_000 * Self.scale
        let account = Account(name: "shared")
        let counters = (0..<8).map { _ in Counter() }
        let tokens = try counters.map { counter in
            try account.observe(\.name, options: .new) { _, change in
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

    @Test func observersAddedAndRemovedFromManyThreadsAreReleasedExactlyOnce() throws {
        let threads = 4
        let rounds = 500 * Self.scale
        let account = Account()
        if refusedWithoutLayout({ _ = try account.observe(\.balance) { _, _ in } }) { return }
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
                let token = try! account.observe(\.balance, options: round % 3 == 0 ? [.initial] : []) {
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
    /// exactly once. Deliveries to live observers are not left to the
    /// scheduler: each worker's first observer waits until both of its blocks
    /// have been called before it may die, so the test never passes vacuously
    /// and never fails because the notifier was not scheduled in time.
    @Test func controllersAndObserversDyingOnOtherThreadsAreNeverCalledDead() throws {
        let threads = 4
        let rounds = 300 * Self.scale
        let account = Account()
        if refusedWithoutLayout({ _ = try account.observe(\.name) { _, _ in } }) { return }
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
                let controllerCalls = Counter()
                try! kvo.observe(account, \.name) { observer, _, _ in
                    withExtendedLifetime(controllerProbe) {}
                    calls.increment()
                    controllerCalls.increment()
                    if observer.isDeinitializing { deadCalls.increment() }
                }
                let hubProbe = LifetimeProbe(released)
                let hubCalls = Counter()
                try! NotificationHub.default.addObserver(observer, name: name, object: account) { observer, _ in
                    withExtendedLifetime(hubProbe) {}
                    calls.increment()
                    hubCalls.increment()
                    if observer.isDeinitializing { deadCalls.increment() }
                }
                if round == 0 {
                    // The notifier is running: this ends as soon as it is scheduled. The
                    // deadline only turns a delivery bug into a failure below instead of a hang.
                    let deadline = ContinuousClock.now + .seconds(60)
                    while (controllerCalls.count == 0 || hubCalls.count == 0) && ContinuousClock.now < deadline {
                        sched_yield()
                    }
                }
                if round % 2 == 0 { kvo.unobserveAll() }
            }  // the observer and its controller die here
        }
        stop.increment()
        while !notifier.isFinished { sched_yield() }
        // One more post meets the hub registrations of observers that died after the last one.
        NotificationHub.default.post(name: name, object: account)
        flushReleases()
        #expect(calls.count >= 2 * threads)
        #expect(deadCalls.count == 0)
        #expect(released.count == 2 * threads * rounds)
    }

    @Test func hubPostsFromManyThreadsReachEachObserverExactlyOnce() throws {
        let threads = 4
        let posts = 1_000 * Self.scale
        let name = NotificationHub.Name("concurrency.posts")
        let observers = (0..<4).map { _ in Observer() }
        let counter = Counter()
        for observer in observers {
            try NotificationHub.default.addObserver(observer, name: name) { _, _ in counter.increment() }
        }
        runConcurrently(threads) { _ in
            for _ in 0..<posts { NotificationHub.default.post(name: name, userInfo: ["k": 1]) }
        }
        #expect(counter.count == threads * posts * observers.count)
        observers.forEach { NotificationHub.default.removeObserver($0) }
    }

    @Test func noCallAfterInvalidateUnderConcurrency() throws {
        let owner = AtkOwner()
        if refusedWithoutLayout({ _ = try owner.observe(\.label) { _, _ in } }) { return }
        let violations = Atomic<Int>(0)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for _ in 0..<300 {
                let dead = Atomic<Bool>(false)
                let token: ObservationToken?
                if i % 2 == 0 {
                    token = try? owner.observe(\.label) { _, _ in
                        if dead.load(ordering: .acquiring) { violations.add(1, ordering: .relaxed) }
                    }
                } else {
                    token = try? owner.observe(keyPath: "label") { _, _ in
                        if dead.load(ordering: .acquiring) { violations.add(1, ordering: .relaxed) }
                    }
                }
                lock.withLock { owner.label = "x" }  // stored values are not atomic
                try? token?.invalidateAndWait()
                dead.store(true, ordering: .releasing)
                #expect(token?.isValid == false)
                lock.withLock { owner.label = "y" }
            }
        }
        #expect(violations.load(ordering: .relaxed) == 0)
    }

    @Test func exactlyOnceWhileOthersChurnSameKey() throws {
        let owner = AtkOwner()
        let delivered = Atomic<Int>(0)
        let token = try owner.observe(\.label) { _, _ in delivered.add(1, ordering: .relaxed) }
        let done = Atomic<Bool>(false)
        let churn = Thread {
            let observer = AtkObserver()
            let kvo = KVOController(observer: observer)
            while !done.load(ordering: .relaxed) {
                _ = try? kvo.observe(owner, keyPath: "label") { _, _, _ in }
                _ = kvo.unobserve(owner, \.label)
                let t = try? owner.observe(\.label, options: .prior) { _, _ in }
                _ = t?.invalidate()
            }
        }
        churn.start()
        for i in 0..<5000 { owner.label = "\(i)" }
        done.store(true, ordering: .relaxed)
        while !churn.isFinished { usleep(100) }
        #expect(delivered.load(ordering: .relaxed) == 5000)
        _ = token.invalidate()
    }
}

/// An observer that records when its deinit begins: a block called with it
/// afterwards would see the flag set (or, under AddressSanitizer, touch freed memory).
private final class MortalObserver: Sendable {
    private let deinitialized = Atomic<Bool>(false)
    var isDeinitializing: Bool { deinitialized.load(ordering: .relaxed) }
    deinit { deinitialized.store(true, ordering: .relaxed) }
}

import SwiftKVOTestSupport
import Testing
@testable import SwiftKVO

/// Whether this is an optimized build: only there do `@Observed` accessors fold
/// their key paths into direct field accesses. Unoptimized builds go through
/// the key path runtime, which allocates a holder per mutation.
private let isOptimizedBuild: Bool = {
    #if DEBUG
    return false
    #else
    return true
    #endif
}()

/// Zero heap allocations per notification, counted by the malloc shim in
/// Tests/SwiftKVOTestSupport (per thread, so parallel tests do not disturb it).
/// Run in release: `swift test -c release -Xswiftc -enable-testing --filter AllocationTests`.
@Suite(
    .enabled(if: skvo_alloc_counting_supported(), "malloc cannot be counted under sanitizers"),
    .enabled(if: isOptimizedBuild, "allocation counts are only meaningful in optimized builds"))
struct AllocationTests {
    @Test func observedSetWithClosureObserversAllocatesNothingPerNotification() throws {
        let account = Account()
        let counter = Counter()
        let tokens = [
            try account.observe(\.balance, options: [.old, .new]) { _, change in
                if change.newValue! > change.oldValue! { counter.increment() }
            },
            try account.observe(\.balance) { _, _ in counter.increment() },
            try account.observe(\.name, options: [.new, .prior]) { _, change in
                if change.newValue?.isEmpty == false { counter.increment() }
            },
        ]
        let name = "a name long enough not to be a small string"
        // Warm up: resolve keys, fill caches, touch lazily created state.
        for index in 0..<100 {
            account.balance = Double(index)
            account.name = name
        }
        let before = counter.count
        skvo_alloc_begin()
        for index in 100..<1_100 {
            account.balance = Double(index)
            account.name = name
        }
        let allocations = skvo_alloc_end()
        #expect(counter.count - before == 3_000)
        #expect(allocations == 0)
        tokens.forEach { $0.invalidate() }
    }

    @Test func hubPostToBlockObserversAllocatesNothingOnceWarm() throws {
        let hub = NotificationHub.default
        let name = NotificationHub.Name("test.allocation.post")
        let observer = Observer()
        let sender = Account()
        let counter = Counter()
        try hub.addObserver(observer, name: name, object: sender) { _, note in
            if note.object != nil { counter.increment() }
        }
        try hub.addObserver(observer, name: name) { _, _ in counter.increment() }
        // Warm up: the first post on this thread starts the contents later posts reuse.
        for _ in 0..<100 { hub.post(name: name, object: sender) }
        let before = counter.count
        skvo_alloc_begin()
        for _ in 0..<1_000 { hub.post(name: name, object: sender) }
        let allocations = skvo_alloc_end()
        #expect(counter.count - before == 2_000)
        #expect(allocations == 0)
        hub.removeObserver(observer)
    }

    @Test func hubPostWithALiteralNameAllocatesNothing() throws {
        let hub = NotificationHub.default
        let observer = Observer()
        let counter = Counter()
        try hub.addObserver(observer, name: "test.allocation.literal.observed") { _, _ in counter.increment() }
        for _ in 0..<100 {
            hub.post(name: "test.allocation.literal.observed")
            hub.post(name: "test.allocation.literal.never.observed")
        }
        let before = counter.count
        skvo_alloc_begin()
        for _ in 0..<1_000 {
            hub.post(name: "test.allocation.literal.observed")
            hub.post(name: "test.allocation.literal.never.observed")
        }
        let allocations = skvo_alloc_end()
        #expect(counter.count - before == 1_000)
        #expect(allocations == 0)
        hub.removeObserver(observer)
    }

    @Test func unobservedSetAllocatesNothing() throws {
        let account = Account()
        account.balance = 1
        skvo_alloc_begin()
        for index in 0..<1_000 { account.balance = Double(index) }
        #expect(skvo_alloc_end() == 0)
    }

    @Test func mallocShimCountsAllocations() throws {
        guard skvo_alloc_counting_supported() else { return }
        skvo_alloc_begin()
        let array = [Int](repeating: 1, count: 1000)
        let count = skvo_alloc_end()
        #expect(array.count == 1000)
        #expect(count >= 1)
    }
}

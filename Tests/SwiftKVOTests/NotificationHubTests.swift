import Foundation
import IsolatedRunSupport
import Synchronization
import Testing
@testable import SwiftKVO

extension NotificationHub.Name {
    static let accountSynced = NotificationHub.Name("test.accountSynced")
}

/// How many engine registrations of `name` exist, for any sender (the name's
/// probe counter: exact once removals were flushed).
func liveObservations(of name: NotificationHub.Name) -> Int {
    Int(Engine.probe(of: name.keyIfEverObserved).raw.pointee.observations)
}

/// SPEC §2 item 15 through the Swift hub. Every test uses its own names, so
/// tests running in parallel never see each other's posts.
@Suite struct NotificationHubTests {
    private func uniqueName(_ function: String = #function) -> NotificationHub.Name {
        NotificationHub.Name("test.\(function)")
    }

    @Test func observerForAnySenderReceivesEveryPostWithPayload() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let account = Account()
        let log = Log<String>()
        try hub.addObserver(observer, name: name, object: nil) { observer, note in
            log.append("\(note.name.rawValue) \(note.object === account) \(note.userInfo["count"] as? Int ?? -1)")
        }
        hub.post(name: name, object: account, userInfo: ["count": 3])
        hub.post(name: name)
        #expect(log.values == ["\(name.rawValue) true 3", "\(name.rawValue) false -1"])
        hub.removeObserver(observer)
    }

    @Test func senderFilterReceivesOnlyThatSender() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let a = Account()
        let b = Account()
        let counter = Counter()
        try hub.addObserver(observer, name: name, object: a) { _, _ in counter.increment() }
        hub.post(name: name, object: a)
        hub.post(name: name, object: b)
        hub.post(name: name)
        #expect(counter.count == 1)
        hub.removeObserver(observer)
    }

    @Test func deadObserverIsSkippedAndItsRegistrationGoes() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let counter = Counter()
        let released = Counter()
        var observer: Observer? = Observer()
        do {
            let capture = LifetimeProbe(released)
            try hub.addObserver(observer!, name: name) { _, _ in
                _ = capture
                counter.increment()
            }
        }
        hub.post(name: name)
        #expect(liveObservations(of: name) == 1)
        observer = nil
        hub.post(name: name)  // meets the dead observer: skipped, its removal queued
        flushReleases()
        hub.post(name: name)
        #expect(counter.count == 1)
        #expect(liveObservations(of: name) == 0)
        #expect(released.count == 1)
    }

    @Test func removalByObserverByNameAndByRegistration() throws {
        let hub = NotificationHub.default
        let n1 = uniqueName() 
        let n2 = NotificationHub.Name(n1.rawValue + ".2")
        let observer = Observer()
        let log = Log<String>()
        try hub.addObserver(observer, name: n1) { _, _ in log.append("n1") }
        try hub.addObserver(observer, name: n2) { _, _ in log.append("n2") }
        let registration = try hub.addObserver(observer, name: n2) { _, _ in log.append("n2'") }
        hub.removeObserver(registration)
        hub.removeObserver(registration)  // double removal
        hub.post(name: n1)
        hub.post(name: n2)
        hub.removeObserver(observer, name: n1)
        hub.post(name: n1)
        hub.post(name: n2)
        hub.removeObserver(observer)
        hub.removeObserver(observer)  // double removal
        hub.post(name: n2)
        #expect(log.values == ["n1", "n2", "n2"])
    }

    @Test func removalsReportWhatTheyRemoved() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let other = NotificationHub.Name(name.rawValue + ".other")
        let observer = Observer()
        let a = Account()
        let registration = try hub.addObserver(observer, name: name) { _, _ in }
        #expect(hub.removeObserver(registration))
        #expect(!hub.removeObserver(registration))
        try hub.addObserver(observer, name: name, object: a) { _, _ in }
        try hub.addObserver(observer, name: name) { _, _ in }
        try hub.addObserver(observer, name: other) { _, _ in }
        #expect(hub.removeObserver(observer, name: name, object: Account()) == 0)
        #expect(hub.removeObserver(observer, name: name, object: a) == 1)
        #expect(hub.removeObserver(observer, name: name) == 1)
        #expect(hub.removeObserver(observer, name: name) == 0)
        #expect(hub.removeObserver(observer) == 1)
        #expect(hub.removeObserver(observer) == 0)
        let token = try hub.addObserver(forName: name) { _ in }
        #expect(token.invalidate())
        #expect(!token.invalidate())
    }

    @Test func removalAfterAnObservableSenderDiedReportsNotFound() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        var sender: Account? = Account()
        let registration = try hub.addObserver(observer, name: name, object: sender) { _, _ in }
        sender = nil  // its registrar removes the registration
        #expect(!hub.removeObserver(registration))
        #expect(hub.removeObserver(observer) == 0)
    }

    @Test func removalByNameAndSenderKeepsTheObserversOtherRegistrations() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let other = NotificationHub.Name(name.rawValue + ".other")
        let observer = Observer()
        let a = Account()
        let b = Account()
        let log = Log<String>()
        try hub.addObserver(observer, name: name, object: a) { _, _ in log.append("a") }
        try hub.addObserver(observer, name: name, object: b) { _, _ in log.append("b") }
        try hub.addObserver(observer, name: other, object: a) { _, _ in log.append("other a") }

        hub.removeObserver(observer, name: name, object: a)
        hub.post(name: name, object: a)
        hub.post(name: name, object: b)
        hub.post(name: other, object: a)
        hub.removeObserver(observer, name: name)
        hub.post(name: name, object: b)
        hub.post(name: other, object: a)
        hub.removeObserver(observer)
        hub.post(name: other, object: a)

        #expect(log.values == ["b", "other a", "other a"])
    }

    @Test func removalByANameNobodyObservedRemovesNothing() throws {
        // The hub files registrations by their names' keys; a name never
        // observed has none and matches no registration.
        let hub = NotificationHub.default
        let name = uniqueName()
        let neverObserved = NotificationHub.Name(name.rawValue + ".never")
        let observer = Observer()
        let log = Log<String>()
        try hub.addObserver(observer, name: name) { _, _ in log.append("name") }
        #expect(hub.removeObserver(observer, name: neverObserved) == 0)
        hub.post(name: name)
        #expect(log.values == ["name"])
        #expect(hub.removeObserver(observer) == 1)
    }

    @Test func tokenStyleRegistrationEndsWithTheToken() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let counter = Counter()
        let token = try hub.addObserver(forName: name) { _ in counter.increment() }
        hub.post(name: name)
        token.invalidate()
        hub.post(name: name)
        #expect(counter.count == 1)
    }

    @Test func removingANeverAddedObserverIsANoOp() throws {
        let hub = NotificationHub.default
        hub.removeObserver(Observer())
        hub.removeObserver(Observer(), name: .accountSynced, object: Account())
    }

    @Test func senderFilterOnAPlainObjectNeverMatchesAnObjectReusingItsAddress() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let counter = Counter()
        do {
            let sender = Observer()  // not KeyValueObservable: held weakly by the filter
            try hub.addObserver(observer, name: name, object: sender) { _, _ in counter.increment() }
            hub.post(name: name, object: sender)
        }
        for _ in 0..<50 {
            let other = Observer()  // may reuse the dead sender's address
            hub.post(name: name, object: other)
        }
        #expect(counter.count == 1)
        hub.removeObserver(observer)
    }

    @Test func aNotificationKeptByABlockKeepsItsContentsThroughLaterPosts() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let first = Account()
        let second = Account()
        let kept = Log<HubNotification>()
        let seen = Log<Int>()
        try hub.addObserver(observer, name: name) { _, note in
            let count = note.userInfo["count"] as? Int ?? -1
            seen.append(count)
            if count == 1 { kept.append(note) }
        }
        hub.post(name: name, object: first, userInfo: ["count": 1])
        hub.post(name: name, object: second, userInfo: ["count": 2])
        hub.post(name: name, object: nil, userInfo: ["count": 3])
        #expect(seen.values == [1, 2, 3])
        let note = kept.values.first
        #expect(note?.object === first)
        #expect(note?.userInfo["count"] as? Int == 1)
        #expect(note?.name == name)
        hub.removeObserver(observer)
    }

    /// The hub's table of observers gives its room back: once 20,000
    /// observers are removed it is at least a quarter full again. Other
    /// suites file observers in the same table meanwhile; whatever they do,
    /// a table rebuilt on removal never stays under a quarter full.
    @Test func removingManyObserversGivesTheHubsTableItsRoomBack() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observers = (0..<20_000).map { _ in Observer() }
        for observer in observers { try hub.addObserver(observer, name: name) { _, _ in } }
        #expect(NotificationHub.tableOccupancy.capacity >= observers.count)
        for observer in observers { #expect(hub.removeObserver(observer) == 1) }
        let after = NotificationHub.tableOccupancy
        #expect(
            after.capacity <= 96 || after.count * 4 >= after.capacity,
            "room for \(after.capacity) observers, \(after.count) filed")
    }

    @Test func aNotificationKeptByABlockKeepsItsSenderAliveAfterThePost() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let deaths = Counter()
        let kept = Log<HubNotification>()
        try hub.addObserver(observer, name: name) { _, note in kept.append(note) }
        // The only reference to each sender is the post's argument: once the
        // post returns, the kept notifications are all that hold them.
        for _ in 0..<3 { hub.post(name: name, object: Observer { deaths.increment() }) }
        #expect(deaths.count == 0)
        #expect(kept.values.allSatisfy { $0.object != nil })
        hub.removeObserver(observer)
    }

    @Test func aNotificationKeptByABlockReleasesItsSenderWithTheLastCopy() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let deaths = Counter()
        nonisolated(unsafe) var kept: HubNotification?
        try hub.addObserver(observer, name: name) { _, note in kept = note }
        hub.post(name: name, object: Observer { deaths.increment() })
        hub.post(name: name, object: nil)  // replaces the kept notification
        #expect(deaths.count == 1)
        #expect(kept?.object == nil)
        hub.removeObserver(observer)
    }

    @Test func aPostKeepsNeitherItsSenderNorItsPayloadAlive() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let observer = Observer()
        let deaths = Counter()
        try hub.addObserver(observer, name: name) { _, _ in }
        for _ in 0..<3 {  // the first post starts this thread's contents, later ones reuse them
            hub.post(
                name: name, object: Observer { deaths.increment() },
                userInfo: ["payload": LifetimeProbe(deaths)])
        }
        #expect(deaths.count == 6)
        hub.removeObserver(observer)
    }

    @Test func aDeadObserversRegistrationThatNoPostReachesGoesWithLaterRegistrations() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        let released = Counter()
        do {
            let observer = Observer()
            let probe = LifetimeProbe(released)
            try hub.addObserver(observer, name: name) { _, _ in withExtendedLifetime(probe) {} }
        }  // the observer dies, and nothing posts `name` again
        // Registrations purge the table's dead observers each time it has
        // doubled since the last purge; other suites' observers set where
        // that falls, so this registers until it happens (at most a few
        // thousand, however many the others hold).
        var others: [Observer] = []
        while released.count == 0, others.count < 100_000 {
            let other = Observer()
            try hub.addObserver(other, name: name) { _, _ in }
            others.append(other)
            if others.count.isMultiple(of: 64) { flushReleases() }
        }
        flushReleases()
        #expect(released.count == 1, "not released after \(others.count) later registrations")
        for other in others { hub.removeObserver(other) }
    }

    @Test func aNewObserverAtADeadOnesAddressIsNotCreditedWithItsRegistrations() throws {
        let hub = NotificationHub.default
        let name = uniqueName()
        var reused = 0
        for _ in 0..<100 where reused < 5 {
            var address: UInt = 0
            do {
                let dead = Observer()
                address = Engine.address(of: dead)
                try hub.addObserver(dead, name: name) { _, _ in }
            }  // dies; nothing posts `name`, so its registration stays filed
            let newcomer = Observer()  // often gets the dead one's memory
            guard Engine.address(of: newcomer) == address else { continue }
            reused += 1
            #expect(hub.removeObserver(newcomer) == 0)
            #expect(hub.removeObserver(newcomer, name: name) == 0)
        }
        // The allocator under AddressSanitizer quarantines freed memory.
        #expect(reused > 0 || getenv("SWIFTKVO_SANITIZER") != nil, "no address was reused")
    }

    @Test func aPostWithALiteralReachesObserversOfTheSameNameHoweverSpelled() throws {
        let hub = NotificationHub.default
        let observer = Observer()
        let counter = Counter()
        let id = 42
        try hub.addObserver(observer, name: NotificationHub.Name("test.literal.\(id)")) { _, _ in counter.increment() }
        hub.post(name: "test.literal.42")
        hub.post(name: NotificationHub.Name(rawValue: "test.literal." + String(id)))
        #expect(counter.count == 2)
        hub.removeObserver(observer)
        hub.post(name: "test.literal.42")
        #expect(counter.count == 2)
    }

    /// Each thread remembers its last posted name's key: posts that alternate
    /// names, and a name first observed after this thread posted it in vain,
    /// each reach exactly their own observers.
    @Test func alternatingPostsOnOneThreadReachTheirOwnObservers() throws {
        let hub = NotificationHub.default
        let first = uniqueName()
        let second = NotificationHub.Name(first.rawValue + ".second")
        let observer = Observer()
        let log = Log<String>()
        try hub.addObserver(observer, name: first) { _, _ in log.append("first") }
        hub.post(name: first)
        hub.post(name: second)  // nobody observes it yet: no key, nothing remembered
        try hub.addObserver(observer, name: second) { _, _ in log.append("second") }
        for _ in 0..<3 {
            hub.post(name: NotificationHub.Name(first.rawValue))
            hub.post(name: NotificationHub.Name(second.rawValue))
        }
        #expect(log.values == ["first"] + Array(repeating: ["first", "second"], count: 3).flatMap { $0 })
        hub.removeObserver(observer)
    }

    /// The first registration of a name interns it while another thread posts
    /// it: a post that starts after `addObserver` returned finds the name and
    /// reaches the observer, every time (the post's lock-free lookup races the
    /// interning, and the name table grows under it).
    @Test func aPostAfterTheFirstRegistrationOfANameAlwaysReachesIt() throws {
        final class Progress: Sendable {
            let registered = Atomic<Int>(0)
        }
        let hub = NotificationHub.default
        let names = (0..<2_000).map { NotificationHub.Name("test.firstRegistration.\($0)") }
        let observer = Observer()
        let progress = Progress()
        let delivered = Counter()
        let missed = Counter()
        runConcurrently(2) { index in
            if index == 0 {
                for (i, name) in names.enumerated() {
                    try! hub.addObserver(observer, name: name) { _, _ in delivered.increment() }
                    progress.registered.store(i + 1, ordering: .releasing)
                }
                return
            }
            var next = 0
            while next < names.count {
                guard next < progress.registered.load(ordering: .acquiring) else {
                    sched_yield()
                    continue
                }
                let before = delivered.count
                hub.post(name: NotificationHub.Name(names[next].rawValue))
                if delivered.count != before + 1 { missed.increment() }
                next += 1
            }
        }
        #expect(missed.count == 0)
        #expect(delivered.count == names.count)
        #expect(hub.removeObserver(observer) == names.count)
    }

    /// Creating names and posting names nobody observes interns nothing: the
    /// engine's key count stays where it was over 100,000 distinct names built
    /// from data. Keys belong to the whole process and other suites intern
    /// theirs in parallel, so the count is taken in a child running only this test.
    @Test func postingDistinctNamesNobodyObservesLeavesTheKeyCountUnchanged() async throws {
        let name = "postingDistinctNamesNobodyObservesLeavesTheKeyCountUnchanged"
        guard isIsolatedChild(name) else {
            try await measureInChild(
                filter: "SwiftKVOTests.NotificationHubTests/\(name)", name: name, marker: "hub-keys:")
            return
        }
        let hub = NotificationHub.default
        let observer = Observer()
        try hub.addObserver(observer, name: "test.keys.observed") { _, _ in }
        hub.post(name: "test.keys.observed")  // warm: the hub and this thread's post state exist
        let before = Engine.stats().keys
        for id in 0..<100_000 {
            let unobserved = NotificationHub.Name("test.keys.user.\(id).changed")
            hub.post(name: unobserved, userInfo: ["id": id])
        }
        let after = Engine.stats().keys
        print("hub-keys: 100000 posts of distinct unobserved names: engine keys \(before) -> \(after)")
        #expect(after == before)
        hub.removeObserver(observer)
    }
}

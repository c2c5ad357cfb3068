import Testing
@testable import SwiftKVO

/// The crash classes KVO users know: each must be a quiet no-op here.
@Suite(.needsLayout("its registrations")) struct CrashClassTests {
    @Test func doubleRemovalIsANoOpThatReportsNotFound() throws {
        let account = Account()
        let observer = Observer()
        let token = try account.observe(\.name) { _, _ in }
        #expect(token.invalidate())
        #expect(!token.invalidate())
        let kvo = KVOController(observer: observer)
        try kvo.observe(account, \.name) { _, _, _ in }
        #expect(kvo.unobserve(account, \.name))
        #expect(!kvo.unobserve(account, \.name))
        #expect(kvo.unobserve(account) == 0)
        #expect(kvo.unobserveAll() == 0)
        #expect(kvo.unobserveAll() == 0)
    }

    @Test func removalOfNeverObservedIsANoOpThatReportsNotFound() throws {
        let account = Account()
        let kvo = KVOController(observer: Observer())
        #expect(!kvo.unobserve(account, \.name))
        #expect(!kvo.unobserve(account, \.plain))
        #expect(!kvo.unobserve(nil as Account?, \.name))
        #expect(kvo.unobserve(account) == 0)
        #expect(kvo.unobserve(nil) == 0)
        #expect(kvo.unobserveAll() == 0)
        #expect(NotificationHub.default.removeObserver(account) == 0)
        #expect(NotificationHub.default.removeObserver(account, name: .accountSynced) == 0)
    }

    @Test func observedObjectDyingWithObserversIsSafe() throws {
        let observer = Observer()
        let kvo = KVOController(observer: observer, retainsObserved: false)
        let released = Counter()
        var tokens: [ObservationToken] = []
        for _ in 0..<100 {
            let account = Account()
            let probe = LifetimeProbe(released)
            tokens.append(try account.observe(\.name) { _, _ in _ = probe })
            try kvo.observe(account, \.balance) { _, _, _ in }
            try NotificationHub.default.addObserver(observer, name: "crash.sender", object: account) { _, _ in }
            account.name = "x"
        }
        flushReleases()
        #expect(released.count == 100)
        tokens.forEach { $0.invalidate() }  // after the objects died
        kvo.unobserveAll()
        NotificationHub.default.removeObserver(observer)
    }

    @Test func observerDyingFirstIsSafe() throws {
        let account = Account()
        let counter = Counter()
        var kvos: [KVOController<Observer>] = []
        do {
            let observers = (0..<20).map { _ in Observer() }
            for observer in observers {
                let kvo = KVOController(observer: observer)
                try kvo.observe(account, \.name) { _, _, _ in counter.increment() }
                kvos.append(kvo)
                try NotificationHub.default.addObserver(observer, name: "crash.observerDyingFirst") { _, _ in
                    counter.increment()
                }
            }
            withExtendedLifetime(observers) {
                account.name = "alive"
                NotificationHub.default.post(name: "crash.observerDyingFirst")
            }
        }
        #expect(counter.count == 40)
        account.name = "dead"
        NotificationHub.default.post(name: "crash.observerDyingFirst")
        #expect(counter.count == 40)
        kvos.removeAll()
        account.name = "controllers gone"
        #expect(counter.count == 40)
    }

    @Test func controllerSwitchingObservedObjectBackAndForth() throws {
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let a = Account()
        let b = Account()
        let log = Log<String>()
        for round in 0..<50 {
            let (current, other) = round % 2 == 0 ? (a, b) : (b, a)
            kvo.unobserve(other)
            try kvo.observe(current, \.name, options: .new) { _, account, change in
                log.append(account === a ? "a" : "b")
            }
            current.name = "\(round)"
            other.name = "\(round)"
        }
        #expect(log.count == 50)
        #expect(log.values == (0..<50).map { $0 % 2 == 0 ? "a" : "b" })
    }
}

import Foundation
import Testing
import SwiftKVO

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §2.10: a closure is released promptly after its observation is removed,
/// even when the process makes no further call into SwiftKVO: a quiet process
/// does not keep a dead object's closures, and what they capture, alive.
///
/// The engine's designed bound is tens of milliseconds (docs/reliability.md);
/// these tests wait up to five seconds, so load never makes them flaky, and
/// touch nothing but their own counters while they wait.
@Suite(.needsLayout("its registrations")) struct PromptReleaseTests {
    /// Sleeps in short steps until `done()` or five seconds; returns `done()`.
    private func waitQuietly(_ done: () -> Bool) -> Bool {
        for _ in 0..<500 where !done() { usleep(10_000) }
        return done()
    }

    @Test func deadObjectsTokenControllerAndHubClosuresAreReleasedWithNoFurtherCall() throws {
        let released = Counter()
        let observer = Observer()
        let kvo = KVOController(observer: observer, retainsObserved: false)
        let name = NotificationHub.Name("prompt.release.dead-object")
        var token: ObservationToken?
        do {
            let account = Account()
            let tokenProbe = LifetimeProbe(released)
            token = try account.observe(\.balance) { _, _ in withExtendedLifetime(tokenProbe) {} }
            let controllerProbe = LifetimeProbe(released)
            try kvo.observe(account, \.name) { _, _, _ in withExtendedLifetime(controllerProbe) {} }
            let hubProbe = LifetimeProbe(released)
            try NotificationHub.default.addObserver(observer, name: name, object: account) { _, _ in
                withExtendedLifetime(hubProbe) {}
            }
        }  // the account dies here: its observations are removed, nothing else is called
        #expect(waitQuietly { released.count == 3 })
        withExtendedLifetime((token, kvo, observer)) {}
    }

    /// A notification reaches an observer that has died: the delivery removes the observation
    /// without the writer lock (a deferred removal), and then nothing else happens.
    @Test func deadObserversClosureIsReleasedAfterADeliveryWithNoFurtherCall() throws {
        let released = Counter()
        let sender = Account()
        let name = NotificationHub.Name("prompt.release.dead-observer")
        do {
            let observer = Observer()
            let probe = LifetimeProbe(released)
            try NotificationHub.default.addObserver(observer, name: name, object: sender) { _, _ in
                withExtendedLifetime(probe) {}
            }
        }  // the observer dies here; its observation stays until a delivery finds it dead
        NotificationHub.default.post(name: name, object: sender)
        #expect(waitQuietly { released.count == 1 })
        withExtendedLifetime(sender) {}
    }

    @Test func invalidatedTokenIsReleasedWithNoFurtherCall() throws {
        let released = Counter()
        let account = Account()
        do {
            let probe = LifetimeProbe(released)
            let token = try account.observe(\.balance) { _, _ in withExtendedLifetime(probe) {} }
            token.invalidate()
        }
        #expect(waitQuietly { released.count == 1 })
        withExtendedLifetime(account) {}
    }
}

#if Relay
import Dispatch
import Foundation
import SwiftKVO
import Testing

@testable import SwiftKVORelay

// A remote value and a local assignment of one property at the same time.
// No server: the remote value goes straight into the receive path, the local
// one waits in the outbox. Whatever the interleaving, the instance must end
// holding the value of the newest write it knows, and a write it stamped
// must carry what it holds, or instances would hold different values for good.
@Suite struct ConcurrentWriteTests {
    private func relay() throws -> Relay {
        var configuration = RelayConfiguration(
            postgres: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: nil, tls: .disable),
            channel: try RelayChannel("race"), logger: TestServer.quietLogger)
        // No state to load: local writes are queued at once, not held for a load.
        configuration.stateTable = nil
        return try Relay(configuration: configuration)
    }

    /// A remote "set" of `cfg.a` to `value`, stamped a second ahead of now.
    private func remoteSet(_ value: Int, on relay: Relay) -> UInt64 {
        let stamp = UInt64(Date().timeIntervalSince1970 * 1_000_000) + 1_000_000
        _ = relay.receive(#"{"o":"other","i":1,"s":1,"v":1,"t":"set","n":"cfg.a","c":\#(stamp),"x":\#(value)}"#)
        return stamp
    }

    /// The last write of `cfg.a`, and the message this relay queued last for it.
    private func lastWrite(of relay: Relay) throws -> (stamp: UInt64, byThisInstance: Bool, sent: Relay.Outgoing?) {
        let (winner, sent) = relay.state.withLock { ($0.lastWrites[Relay.EntryID(name: "cfg.a", entry: "")], $0.outbox.last { $0.entry?.name == "cfg.a" }) }
        let last = try #require(winner)
        return (last.stamp, last.instance == relay.configuration.instanceID, sent)
    }

    @Test func aLocalWriteStoredBeforeAnAcceptedRemoteValueIsStoredIsPutBack() throws {
        let relay = try relay()
        let settings = Settings()
        try relay.replicate(\.a, of: settings, as: "cfg.a")
        // Before the remote value is stored (accepted already), another
        // thread assigns the property, and its write is stamped and sent.
        let first = LockedState(true)
        let token = try settings.observe(\.a, options: .prior) { _, change in
            guard change.isPrior, first.withLock({ first in defer { first = false }; return first }) else { return }
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                settings.a = 800
                done.signal()
            }
            done.wait()
        }
        let remote = remoteSet(799, on: relay)
        token.invalidate()
        let last = try lastWrite(of: relay)
        // The local write, stamped after the remote one was accepted, is the newer, and what it sent is held.
        #expect(last.byThisInstance && last.stamp > remote)
        #expect(settings.a == 800)
        #expect(last.sent?.stamp == last.stamp && last.sent?.message.contains(#""x":800"#) == true)
    }

    @Test func aLocalWriteStampedAfterARemoteValueOverwroteItSendsWhatIsHeld() throws {
        let relay = try relay()
        let settings = Settings()
        // Registered before the relay's own observer: on the other thread's
        // assignment it holds that thread, between its store and its stamp,
        // until the remote value has been stored over it.
        let stored = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let first = LockedState(true)
        let token = try settings.observe(\.a, options: [.prior, .new]) { _, change in
            if change.isPrior, first.withLock({ first in defer { first = false }; return first }) {
                Thread.detachNewThread { settings.a = 800 }
                stored.wait()
            } else if !change.isPrior, change.newValue == 800 {
                stored.signal()
                proceed.wait()
            }
        }
        try relay.replicate(\.a, of: settings, as: "cfg.a")
        let remote = remoteSet(799, on: relay)
        #expect(settings.a == 799)
        proceed.signal()  // the other thread's write is stamped now
        let deadline = Date().addingTimeInterval(10)
        while (try? lastWrite(of: relay).byThisInstance) != true, Date() < deadline { usleep(1000) }
        token.invalidate()
        let last = try lastWrite(of: relay)
        #expect(last.byThisInstance && last.stamp > remote)
        // Its write carries what the instance holds (799), not the 800 it stored first.
        #expect(settings.a == 799)
        #expect(last.sent?.stamp == last.stamp && last.sent?.message.contains(#""x":799"#) == true)
    }
}
#endif

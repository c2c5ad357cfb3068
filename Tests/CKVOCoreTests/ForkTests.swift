// fork() while other threads dispatch and register (CK notes: epoch records of vanished
// threads, a writer lock a vanished thread may hold): the child observes, dispatches, removes,
// flushes and releases normally, and the parent's hub keeps working.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct ForkTests {
    private func describe(_ code: Int32) -> String {
        switch code {
        case Int32(CKVOTS_FORK_CHILD_TIMEOUT): "child hung (killed after the deadline)"
        case Int32(CKVOTS_FORK_CHILD_SIGNALED)...: "child killed by signal \(code - Int32(CKVOTS_FORK_CHILD_SIGNALED))"
        case Int32(CKVOTS_FORK_CHILD_OBSERVE): "child: ckvo_observe failed"
        case Int32(CKVOTS_FORK_CHILD_DISPATCH): "child: dispatch failed"
        case Int32(CKVOTS_FORK_CHILD_CALLS): "child: callback not called exactly once"
        case Int32(CKVOTS_FORK_CHILD_UNOBSERVE): "child: ckvo_unobserve failed"
        case Int32(CKVOTS_FORK_CHILD_FLUSH): "child: ckvo_hub_flush failed"
        case Int32(CKVOTS_FORK_CHILD_RELEASE): "child: release not called exactly once"
        case Int32(CKVOTS_FORK_CHILD_NEW_HUB): "child: a fresh hub failed"
        case Int32(CKVOTS_FORK_CHILD_KEY): "child: ckvo_key_intern failed"
        default: "code \(code)"
        }
    }

    @Test func childObservesAndDispatchesAfterForkDuringDispatch() {
        let hub = TestHub()
        let key = hub.key("value")
        let forks = UInt32(iterations(4, stress: 100))

        let result = ckvots_fork_scenario(hub.raw, fake(0), key, 2, 1, forks, 30)

        #expect(result == 0, "\(describe(result))")
        // The parent's hub is unaffected.
        let probe = Probe()
        let token = hub.mustObserve(probe, object: fake(0), key: key)
        hub.did(fake(0), key)
        #expect(probe.calls == 1)
        #expect(hub.unobserve(token) == CKVO_OK)
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == 1)
        #expect(hub.stats().observations == 0)
    }

    @Test func childUsesTheDefaultHubAfterForkDuringDispatch() throws {
        let hub = try #require(ckvo_hub_default())
        let key = ckvo_key_intern(hub, "ForkTests.defaultHub", nil)
        #expect(key != 0)
        let object = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)  // unique identity
        defer { object.deallocate() }
        let forks = UInt32(iterations(3, stress: 50))

        let result = ckvots_fork_scenario(hub, UnsafeRawPointer(object), key, 2, 1, forks, 30)

        #expect(result == 0, "\(describe(result))")
        #expect(ckvo_hub_flush(hub) == CKVO_OK)
    }

    /// A release other threads were running at fork time is lost with them in the child: it no
    /// longer counts as pending there (it did forever), and a flush does not wait for it.
    @Test func childDoesNotCountAReleaseInFlightOnAVanishedThreadAsPending() {
        let hub = TestHub()
        let result = ckvots_fork_pending_with_release_in_flight(hub.raw, fake(0), hub.key("value"))
        #expect(result == 0, "child's pending releases, or helper code: \(result)")
    }

    @Test func childOfAnIdleProcessWorksToo() {
        let hub = TestHub()
        let key = hub.key("value")
        let result = ckvots_fork_scenario(hub.raw, fake(0), key, 0, 0, 1, 30)
        #expect(result == 0, "\(describe(result))")
    }
}

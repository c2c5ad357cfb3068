// Token pages kept for records in flight (token.c): while a dispatch holds every grace period,
// churn's records pile up in flight and come back together; the hub keeps empty pages for as
// many as were in flight, so the next burst allocates none, and gives them back once nothing is
// in flight any more (a flush, or the background thread going idle): the memory bound holds.

import CKVOCore
import CKVOTestSupport
import Testing

@Suite struct SparePageTests {
    /// Observe + unobserve `cycles` times on (object 0, `key`), each with its own context.
    private func churn(_ hub: TestHub, _ key: ckvo_key_t, cycles: Int) {
        for i in 0..<cycles {
            var token: ckvo_token_t = .none
            let status = ckvo_observe(
                hub.raw, fake(0), key, CKVO_OPTION_UNIQUE_CONTEXT, nil, ckvots_probe_callback,
                UnsafeMutableRawPointer(bitPattern: 0x10000 + i * 16), nil, &token)
            precondition(status == CKVO_OK)
            precondition(ckvo_unobserve(hub.raw, token) == CKVO_OK)
        }
    }

    /// Runs `body` while a dispatch on another thread is blocked inside its callback, so that no
    /// grace period can pass meanwhile.
    private func withBlockedDispatch(_ hub: TestHub, _ body: @escaping () -> Void) {
        let blockKey = hub.key("blocker")
        let entered = AtomicCounter(), gate = AtomicCounter()
        let blocker = Probe()
        blocker.onChange = { _ in
            entered.value = 1
            while gate.value == 0 { yieldThread() }
        }
        let token = hub.mustObserve(blocker, object: fake(1), key: blockKey)
        let raw = hub.raw
        runThreads(2) { index in
            if index == 0 {
                _ = announce(ckvo_did_change, raw, fake(1), blockKey)
                return
            }
            while entered.value == 0 { yieldThread() }
            body()
            gate.value = 1
        }
        #expect(hub.unobserve(token) == CKVO_OK)
    }

    @Test func sparesKeptForABurstInFlightGoBackAfterAFlush() {
        let hub = TestHub()
        let key = hub.key("value")
        churn(hub, key, cycles: 256)
        hub.flush()
        let settled = hub.stats().bytes
        let inFlight = Box(0)

        withBlockedDispatch(hub) {
            self.churn(hub, key, cycles: 8192)
            inFlight.value = hub.stats().bytes
        }
        // 8,192 records in flight at once: about 512 pages of 16 held, none could come back.
        #expect(inFlight.value > settled + 256 * 1024)
        hub.flush()
        let after = hub.stats()
        #expect(after.pending_releases == 0)
        // Back to eight spare pages (about 10 KB), plus the directory and the stack of vacant
        // entries grown for the 512 pages of the peak (12 bytes a page).
        #expect(
            after.bytes <= settled + 8 * 1400 + 512 * 12 + 4096,
            "spare pages kept after the flush: \(after.bytes) bytes, \(settled) before the burst")
    }
}

// SPEC §2.22, nothing a process can run out of: no registration fails for lack of tokens or
// generations, however long the process runs and however many hubs come and go. Each test runs
// in a child process started with CKVO_COUNTERS_NEAR_END=1, where the process-wide generation
// sequence starts 2^16 before its 64-bit wrap (counters.h), and drives it past that end.

import CKVOCore
import CKVOTestSupport
import Foundation
import IsolatedRunSupport
import Testing

@Suite struct TokenBudgetTests {
    /// Runs the test `name` in a child whose counters start near their ends; true in the child.
    private static func inChildNearTheEnd(_ name: String) async throws -> Bool {
        if isIsolatedChild(name) { return true }
        let child = try await runIsolated(
            filter: "CKVOCoreTests.TokenBudgetTests/\(name)", name: name, seconds: 600,
            environment: ["CKVO_COUNTERS_NEAR_END": "1"])
        #expect(child.status == 0, "the child near the counters' end failed:\n\(child.output)")
        for line in child.output.split(separator: "\n") where line.contains("token-budget:") { print(line) }
        return false
    }

    /// Whether a generation lies in the upper half of the sequence (before the wrap).
    private static func beforeTheWrap(_ generation: UInt64) -> Bool { generation >= 1 << 63 }

    @Test func registrationsPastTheEndOfTheGenerationsAllSucceed() async throws {
        let name = "registrationsPastTheEndOfTheGenerationsAllSucceed"
        guard try await Self.inChildNearTheEnd(name) else { return }

        let hub = TestHub()
        let key = hub.key("value")
        let probe = Probe()
        let cycles = 3 * (1 << 16)
        var failures = 0, sawBefore = false, sawAfter = false
        var stale: [ckvo_token_t] = []
        for n in 0..<cycles {
            let (status, token) = hub.observe(probe, object: fake(n % 7), key: key)
            if status != CKVO_OK || token == .none { failures += 1; continue }
            sawBefore = sawBefore || Self.beforeTheWrap(token.generation)
            sawAfter = sawAfter || !Self.beforeTheWrap(token.generation)
            #expect(token.generation != 0)
            if n % 997 == 0 { stale.append(token) }
            if hub.unobserve(token) != CKVO_OK { failures += 1 }
        }
        #expect(hub.flush() == CKVO_OK)
        print("token-budget: \(cycles) registrations across the wrap, \(failures) failed")
        #expect(failures == 0)
        #expect(sawBefore && sawAfter, "the generations did not cross their wrap")
        // Every record was reused many times over: none of the old tokens finds anything.
        let live = hub.mustObserve(Probe(), object: fake(0), key: key)
        for token in stale {
            #expect(hub.unobserve(token) == CKVO_ENOENT)
            #expect(!ckvo_token_is_live(hub.raw, token))
        }
        #expect(hub.stats().observations == 1)
        #expect(ckvo_token_is_live(hub.raw, live))
        #expect(probe.releases == UInt64(cycles))
    }

    @Test func hubsCreatedPastTheEndOfTheGenerationsKeepTheirTokensApart() async throws {
        let name = "hubsCreatedPastTheEndOfTheGenerationsKeepTheirTokensApart"
        guard try await Self.inChildNearTheEnd(name) else { return }

        // Each hub takes a block of generations at its first registration: 200 hubs take more
        // than the 2^16 left before the wrap.
        let survivor = TestHub()
        let survivorKey = survivor.key("value")
        let kept = survivor.mustObserve(Probe(), object: fake(0), key: survivorKey)
        var previous: ckvo_token_t? = nil
        var failures = 0, sawBefore = false, sawAfter = false
        for _ in 0..<200 {
            let hub = TestHub()
            let key = hub.key("value")
            let (status, token) = hub.observe(Probe(), object: fake(0), key: key)
            if status != CKVO_OK { failures += 1; continue }
            sawBefore = sawBefore || Self.beforeTheWrap(token.generation)
            sawAfter = sawAfter || !Self.beforeTheWrap(token.generation)
            // The token of a destroyed hub, and a live hub's, name nothing here.
            if let previous { #expect(hub.unobserve(previous) == CKVO_ENOENT) }
            #expect(hub.unobserve(kept) == CKVO_ENOENT)
            #expect(survivor.unobserve(token) == CKVO_ENOENT)
            #expect(hub.stats().observations == 1)
            previous = token
            #expect(hub.destroy() == CKVO_OK)
        }
        print("token-budget: 200 hubs across the wrap, \(failures) registrations failed")
        #expect(failures == 0)
        #expect(sawBefore && sawAfter, "the generations did not cross their wrap")
        #expect(ckvo_token_is_live(survivor.raw, kept))
    }

    @Test func registrationOrderHoldsAcrossTheEndOfTheGenerations() async throws {
        let name = "registrationOrderHoldsAcrossTheEndOfTheGenerations"
        guard try await Self.inChildNearTheEnd(name) else { return }

        let hub = TestHub()
        let key = hub.key("value")
        // Spend generations until the next ones straddle the wrap.
        let spender = Probe()
        while true {
            let token = hub.mustObserve(spender, object: fake(1), key: key)
            #expect(hub.unobserve(token) == CKVO_OK)
            if token.generation >= UInt64.max - 10 { break }
        }
        // Observers of this object and of every object, alternately: dispatch merges the two
        // lists by generation, and the order must still be the order of registration.
        let recorder = Recorder()
        var generations: [UInt64] = []
        for id in 1...24 {
            let token = hub.mustObserve(Probe(recorder, id: UInt64(id)), object: id % 2 == 0 ? nil : fake(0), key: key)
            generations.append(token.generation)
        }
        #expect(generations.contains { Self.beforeTheWrap($0) } && generations.contains { !Self.beforeTheWrap($0) })
        hub.did(fake(0), key)
        #expect(recorder.order == Array(1...24))
    }
}

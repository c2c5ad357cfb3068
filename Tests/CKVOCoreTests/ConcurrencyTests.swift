// SPEC §2.5, §2.10, §2.11 under contention. Workers are raw pthreads released together by a
// barrier; invariants are checked by counting and by a global atomic sequence that orders
// registration, removal and dispatch events — never by timing. CKVO_STRESS=1 runs long.

import CKVOCore
import CKVOTestSupport
import Testing

/// One registration made by an observer thread, with the sequence numbers around each call.
private final class Registration {
    let id: UInt64
    let probe: Probe
    var token: ckvo_token_t = .none
    var observeStatus: ckvo_status_t?
    var unobserveStatus: ckvo_status_t?
    var registerStart: UInt64 = 0
    var registered: UInt64 = 0
    var unobserveStart: UInt64 = .max
    var unobserved: UInt64 = .max
    /// The removing thread's own next dispatch still called it.
    var calledAfterOwnUnobserve = false

    init(id: UInt64) {
        self.id = id
        self.probe = Probe(id: id)
    }
}

/// One dispatch made by a dispatcher thread: its sequence span and the probes it called.
private struct DispatchRecord {
    var start: UInt64
    var end: UInt64
    var status: ckvo_status_t
    var called: [UInt64]
    var overflowed: Bool
}

/// What one worker thread did; touched only by that thread until it is joined.
private final class WorkerLog {
    var registrations: [Registration] = []
    var dispatches: [DispatchRecord] = []
}

/// A trace buffer owned by one thread.
private final class TraceBuffer {
    let capacity = 1024
    let pointer: UnsafeMutablePointer<UInt64>
    init() { pointer = .allocate(capacity: capacity) }
    deinit { pointer.deallocate() }

    /// Runs `body` with this thread's probe calls traced; returns the ids called (nil: overflow).
    func trace(_ body: () -> Void) -> [UInt64]? {
        ckvots_trace_begin(pointer, capacity)
        body()
        let count = ckvots_trace_end()
        guard count <= capacity else { return nil }
        return Array(UnsafeBufferPointer(start: pointer, count: count))
    }
}

@Suite struct ConcurrencyTests {
    /// (a) Dispatchers announce one key while observers register and remove observations of it
    /// (rotating ckvo_unobserve, ckvo_unobserve_sync and ckvo_unobserve_deferred).
    /// Each dispatch must call every observation registered before it started and removed after
    /// it ended exactly once, never one whose unobserve returned before it started, never one
    /// twice; a removing thread's own next dispatch never calls what it removed; every context
    /// is released exactly once and never called after its release.
    @Test func dispatchCallsExactlyTheObservationsThatSpanIt() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let object = fake(0)
        let clock = AtomicCounter()
        let dispatchers = 4
        let observers = 3
        let registrationsEach = iterations(500, stress: 50_000)
        let observersDone = AtomicCounter()
        let dispatchesDone = AtomicCounter()
        let maxLive = 5
        let logs = (0..<(dispatchers + observers)).map { _ in WorkerLog() }

        runThreads(dispatchers + observers) { index in
            let log = logs[index]
            let trace = TraceBuffer()
            if index < dispatchers {
                // Dispatch for as long as the observers work, so the two always overlap.
                while observersDone.value < UInt64(observers) {
                    var start: UInt64 = 0
                    var end: UInt64 = 0
                    var status = CKVO_OK
                    let called = trace.trace {
                        start = clock.next()
                        status = announce(ckvo_did_change, raw, object, key)
                        end = clock.next()
                    }
                    log.dispatches.append(
                        DispatchRecord(
                            start: start, end: end, status: status, called: called ?? [], overflowed: called == nil))
                    dispatchesDone.next()
                    yieldThread()  // interleave finely with the observers (few cores)
                }
                return
            }
            var rng = SplitMix(seed: UInt64(index))
            var live: [Registration] = []
            func remove(_ r: Registration) {
                r.unobserveStart = clock.next()
                // Rotate through the three removals; all promise the same to later dispatches.
                switch r.id % 3 {
                case 0: r.unobserveStatus = ckvo_unobserve(raw, r.token)
                case 1: r.unobserveStatus = ckvo_unobserve_sync(raw, r.token)
                default: r.unobserveStatus = ckvo_unobserve_deferred(raw, r.token)
                }
                r.unobserved = clock.next()
                let called = trace.trace { _ = announce(ckvo_did_change, raw, object, key) }
                r.calledAfterOwnUnobserve = called?.contains(r.id) ?? true
            }
            for i in 0..<registrationsEach {
                let r = Registration(id: UInt64((index - dispatchers) * registrationsEach + i + 1))
                log.registrations.append(r)
                r.registerStart = clock.next()
                r.observeStatus = ckvo_observe(
                    raw, object, key, 0, nil, ckvots_probe_callback, r.probe.context, ckvots_probe_release,
                    &r.token)
                r.registered = clock.next()
                live.append(r)
                // Let whole dispatches happen while it is registered: after `dispatchers + 1`
                // more completions, some dispatcher started one after this registration.
                let target = dispatchesDone.value + UInt64(dispatchers + 1)
                var spins = 0
                while dispatchesDone.value < target && spins < 1_000_000 {
                    yieldThread()
                    spins += 1
                }
                if live.count > maxLive { remove(live.remove(at: Int(rng.next() % UInt64(live.count)))) }
            }
            for r in live { remove(r) }
            observersDone.next()
        }

        let registrations = logs.flatMap(\.registrations)
        let byID = Dictionary(uniqueKeysWithValues: registrations.map { ($0.id, $0) })
        #expect(registrations.allSatisfy { $0.observeStatus == CKVO_OK && $0.unobserveStatus == CKVO_OK })
        #expect(
            registrations.filter(\.calledAfterOwnUnobserve).count == 0,
            "called by the removing thread's own dispatch after ckvo_unobserve returned")

        var duplicateCalls = 0
        var callsAfterUnobserveReturned = 0
        var callsBeforeRegistration = 0
        var missedCalls = 0
        var spanningPairs = 0
        var badStatuses = 0
        var overflows = 0
        for log in logs.prefix(dispatchers) {
            for d in log.dispatches {
                if d.status != CKVO_OK { badStatuses += 1 }
                if d.overflowed { overflows += 1 }
                duplicateCalls += d.called.count - Set(d.called).count
                for id in d.called {
                    guard let r = byID[id] else { continue }
                    if r.unobserved < d.start { callsAfterUnobserveReturned += 1 }
                    if r.registerStart > d.end { callsBeforeRegistration += 1 }
                }
            }
            // Registered before the dispatch started and removed after it ended: called once.
            for r in registrations {
                var i = firstIndex(in: log.dispatches) { $0.start > r.registered }
                while i < log.dispatches.count && log.dispatches[i].start < r.unobserveStart {
                    let d = log.dispatches[i]
                    if d.end < r.unobserveStart && !d.overflowed {
                        spanningPairs += 1
                        if !d.called.contains(r.id) { missedCalls += 1 }
                    }
                    i += 1
                }
            }
        }
        #expect(badStatuses == 0)
        #expect(overflows == 0)
        #expect(duplicateCalls == 0, "an observation called twice by one dispatch")
        #expect(callsAfterUnobserveReturned == 0, "called by a dispatch that started after ckvo_unobserve returned")
        #expect(callsBeforeRegistration == 0)
        #expect(missedCalls == 0, "an observation spanning a dispatch was not called by it")
        #expect(spanningPairs > 0, "no dispatch ever spanned a registration: the test checked nothing")

        _ = hub.unobserve(hub.mustObserve(Probe(), object: fake(1), key: key))  // a writer op after the last deferred removal
        #expect(hub.flush() == CKVO_OK)
        #expect(registrations.filter { $0.probe.releases != 1 }.count == 0, "context not released exactly once")
        #expect(registrations.allSatisfy { $0.probe.callsAfterRelease == 0 }, "called after its release")
        let stats = hub.stats()
        #expect(stats.observations == 0)
        #expect(stats.pending_releases == 0)
    }

    /// (b) After ckvo_unobserve_sync returns, the callback is never entered again, and no call
    /// is still inside it, while other threads keep dispatching.
    @Test func strictUnobserveNeverLetsTheCallbackRunAfterItReturns() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let dispatchers = 3
        let rounds = iterations(60, stress: 10_000)
        let sentinels = (0..<rounds).map { _ in ckvots_sentinel_create(2_000)! }
        defer { sentinels.forEach { ckvots_sentinel_destroy($0) } }
        let stop = AtomicCounter()
        let results = Box<[(status: ckvo_status_t, stillInside: UInt32)]>([])

        runThreads(dispatchers + 1) { index in
            guard index == dispatchers else {
                while stop.value == 0 { _ = announce(ckvo_did_change, raw, fake(0), key) }
                return
            }
            var local: [(status: ckvo_status_t, stillInside: UInt32)] = []
            for sentinel in sentinels {
                var token: ckvo_token_t = .none
                guard ckvo_observe(
                    raw, fake(0), key, 0, nil, ckvots_sentinel_callback, UnsafeMutableRawPointer(sentinel),
                    ckvots_sentinel_release, &token) == CKVO_OK
                else {
                    local.append((CKVO_EINVAL, 0))
                    continue
                }
                var spins = 0
                while ckvots_sentinel_calls(sentinel) == 0 && spins < 1_000_000 {
                    yieldThread()
                    spins += 1
                }
                let status = ckvo_unobserve_sync(raw, token)
                local.append((status, ckvots_sentinel_mark_sync_returned(sentinel)))
            }
            // Keep dispatching a little after the last strict unobserve.
            for _ in 0..<100 { yieldThread() }
            stop.value = 1
            results.value = local
        }
        for _ in 0..<10 { hub.did(fake(0), key) }

        #expect(results.value.count == rounds)
        #expect(results.value.allSatisfy { $0.status == CKVO_OK })
        #expect(results.value.allSatisfy { $0.stillInside == 0 }, "a callback was still running after sync returned")
        #expect(sentinels.allSatisfy { ckvots_sentinel_violations($0) == 0 }, "callback entered after sync returned")
        #expect(sentinels.contains { ckvots_sentinel_calls($0) > 0 }, "the dispatchers never reached a sentinel")
        #expect(hub.flush() == CKVO_OK)
        #expect(sentinels.allSatisfy { ckvots_sentinel_releases($0) == 1 })
    }

    /// A dispatch that starts after ckvo_unobserve_deferred returned skips the observation, also
    /// while other threads' writer operations are draining (unlinking) it at that moment.
    @Test func deferredRemovalIsSkippedByLaterDispatchesWhileWritersDrainIt() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let writers = 2
        let rounds = iterations(10_000, stress: 1_000_000)
        let done = AtomicCounter()
        let violations = AtomicCounter()
        let failures = AtomicCounter()
        let probes = (0..<rounds).map { _ in Probe() }
        let writerProbes = (0..<writers).map { _ in Probe() }
        // A bystander keeps the slot alive, so each round's observation shares one list.
        _ = hub.mustObserve(Probe(), object: fake(0), key: key)

        runThreads(writers + 1) { index in
            guard index == writers else {
                // Writers: every registration or removal drains the deferred queue.
                let probe = writerProbes[index]
                while done.value == 0 {
                    var token: ckvo_token_t = .none
                    if ckvo_observe(
                        raw, fake(1 + index), key, 0, nil, ckvots_probe_callback, probe.context,
                        ckvots_probe_release, &token) == CKVO_OK
                    {
                        _ = ckvo_unobserve(raw, token)
                    }
                }
                return
            }
            for probe in probes {
                var token: ckvo_token_t = .none
                guard ckvo_observe(
                    raw, fake(0), key, 0, nil, ckvots_probe_callback, probe.context, ckvots_probe_release,
                    &token) == CKVO_OK,
                    ckvo_unobserve_deferred(raw, token) == CKVO_OK
                else {
                    failures.next()
                    continue
                }
                // Dispatch on through the window in which a writer drains (unlinks) it.
                for _ in 0..<16 {
                    let before = probe.calls
                    _ = announce(ckvo_did_change, raw, fake(0), key)
                    if probe.calls != before { violations.next() }
                }
            }
            done.value = 1
        }

        #expect(failures.value == 0)
        #expect(violations.value == 0, "dispatches that started after ckvo_unobserve_deferred returned called it")
        _ = hub.unobserve(hub.mustObserve(Probe(), object: fake(9), key: key))  // drain the last one
        #expect(hub.flush() == CKVO_OK)
        #expect(probes.allSatisfy { $0.releases == 1 })
    }

    @Test func racingDuplicateRegistrationsYieldOneObservation() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let threads = 4
        let rounds = iterations(40, stress: 2_000)
        let probe = Probe()
        var failures: [String] = []

        for round in 0..<rounds {
            let outcomes = (0..<threads).map { _ in Box<(ckvo_status_t, ckvo_token_t)>((CKVO_EINVAL, .none)) }
            runThreads(threads) { index in
                var token: ckvo_token_t = .none
                let status = ckvo_observe(
                    raw, fake(0), key, CKVO_OPTION_NEW, fake(9), ckvots_probe_callback, probe.context,
                    ckvots_probe_release, &token)
                outcomes[index].value = (status, token)
            }
            let statuses = outcomes.map(\.value.0)
            let tokens = Set(outcomes.map(\.value.1))
            if statuses.filter({ $0 == CKVO_OK }).count != 1
                || statuses.filter({ $0 == CKVO_EEXIST }).count != threads - 1 || tokens.count != 1
            {
                failures.append("round \(round): \(statuses), tokens \(tokens)")
            }
            _ = ckvo_unobserve(raw, tokens.first ?? .none)
        }

        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(hub.flush() == CKVO_OK)
        #expect(probe.releases == UInt64(rounds), "released once per successful observe")
    }

    @Test func racingRemovalsOfOneTokenSucceedExactlyOnce() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let threads = 4
        let rounds = iterations(40, stress: 2_000)
        var probes: [Probe] = []
        var failures: [String] = []

        for round in 0..<rounds {
            let probe = Probe()
            probes.append(probe)
            let token = hub.mustObserve(probe, object: fake(0), key: key)
            let outcomes = (0..<threads).map { _ in Box(CKVO_EINVAL) }
            runThreads(threads) { index in
                switch index % 3 {
                case 0: outcomes[index].value = ckvo_unobserve(raw, token)
                case 1: outcomes[index].value = ckvo_unobserve_sync(raw, token)
                default: outcomes[index].value = ckvo_unobserve_deferred(raw, token)
                }
            }
            let statuses = outcomes.map(\.value)
            if statuses.filter({ $0 == CKVO_OK }).count != 1
                || statuses.filter({ $0 == CKVO_ENOENT }).count != threads - 1
            {
                failures.append("round \(round): \(statuses)")
            }
        }

        #expect(failures.isEmpty, "\(failures.prefix(3))")
        _ = hub.mustObserve(Probe(), object: fake(1), key: key)  // a writer op for deferred removals
        #expect(hub.flush() == CKVO_OK)
        #expect(probes.allSatisfy { $0.releases == 1 })
        #expect(hub.stats().observations == 1)
    }

    /// The (object, key) map is probed lock-free while writers add and remove other objects'
    /// slots, leave tombstones, empty clusters and replace the table as it grows: a dispatch to
    /// an object observed throughout must reach its observer every time.
    @Test func dispatchFindsEverySteadySlotWhileOtherSlotsComeAndGo() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let steady = 64
        let anchors = (0..<steady).map { _ in Probe() }
        for (i, anchor) in anchors.enumerated() { _ = hub.mustObserve(anchor, object: fake(i), key: key) }
        let dispatchers = 2
        let rounds = iterations(300, stress: 30_000)
        let done = AtomicCounter()
        let sweeps = (0..<dispatchers).map { _ in AtomicCounter() }
        let churn = Probe()

        runThreads(dispatchers + 1) { index in
            if index < dispatchers {
                while done.value == 0 {
                    for i in 0..<steady { _ = announce(ckvo_did_change, raw, fake(i), key) }
                    sweeps[index].next()
                }
                return
            }
            // Thousands of other objects: the table grows, then shrinks to tombstones and back.
            for round in 0..<rounds {
                let base = steady + (round % 3) * 4_000
                var tokens: [ckvo_token_t] = []
                for j in 0..<(1 + round % 50) * 40 {
                    var token: ckvo_token_t = .none
                    if ckvo_observe(
                        raw, fake(base + j), key, 0, nil, ckvots_probe_callback, churn.context,
                        ckvots_probe_release, &token) == CKVO_OK
                    {
                        tokens.append(token)
                    }
                }
                for token in tokens.reversed() where round % 2 == 0 { _ = ckvo_unobserve(raw, token) }
                for token in tokens where round % 2 == 1 { _ = ckvo_unobserve(raw, token) }
            }
            done.next()
        }

        let expected = sweeps.reduce(0) { $0 + $1.value }
        #expect(expected > 0, "the dispatchers never completed a sweep")
        for (i, anchor) in anchors.enumerated() {
            // Sweeps are counted whole: a dispatcher checks for the end only between sweeps.
            #expect(anchor.calls == expected, "anchor \(i): \(anchor.calls) calls for \(expected) sweeps")
        }
        #expect(hub.flush() == CKVO_OK)
        #expect(anchors.allSatisfy { $0.releases == 0 })
    }

    @Test func hasObserversIsNeverFalseWhileObservedUnderChurn() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let anchor = Probe()
        _ = hub.mustObserve(anchor, object: fake(0), key: key)
        let readers = 2
        let churners = 2
        let rounds = iterations(2_000, stress: 200_000)
        let falseAnswers = AtomicCounter()
        let done = AtomicCounter()
        let churnProbes = (0..<churners).map { _ in Probe() }

        runThreads(readers + churners) { index in
            if index < readers {
                while done.value < UInt64(churners) {
                    if !ckvo_has_observers(raw, fake(0), key) { falseAnswers.next() }
                    if !ckvo_has_observers(raw, fake(0), key) { falseAnswers.next() }
                }
                return
            }
            let probe = churnProbes[index - readers]
            for i in 0..<rounds {
                // Same object and key as the anchor, and other objects, come and go.
                var token: ckvo_token_t = .none
                let object = i % 2 == 0 ? fake(0) : fake(1 + i % 7)
                if ckvo_observe(
                    raw, object, key, 0, nil, ckvots_probe_callback, probe.context, ckvots_probe_release, &token)
                    == CKVO_OK
                {
                    _ = ckvo_unobserve(raw, token)
                }
            }
            done.next()
        }

        #expect(falseAnswers.value == 0, "ckvo_has_observers said false while an observation existed")
        #expect(hub.flush() == CKVO_OK)
        #expect(churnProbes.allSatisfy { $0.releases == UInt64(rounds) })
        #expect(anchor.releases == 0)
    }

    @Test func unobserveObjectDuringDispatchesReleasesEachContextOnce() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let dispatchers = 3
        let rounds = iterations(100, stress: 10_000)
        let perRound = 4
        let probes = (0..<(rounds * perRound)).map { Probe(id: UInt64($0)) }
        let stop = AtomicCounter()
        let statuses = Box<[ckvo_status_t]>([])

        runThreads(dispatchers + 1) { index in
            guard index == dispatchers else {
                while stop.value == 0 {
                    _ = announce(ckvo_will_change, raw, fake(0), key)
                    _ = announce(ckvo_did_change, raw, fake(0), key)
                }
                return
            }
            var local: [ckvo_status_t] = []
            for round in 0..<rounds {
                for j in 0..<perRound {
                    local.append(
                        ckvo_observe(
                            raw, fake(0), key, j % 2 == 0 ? CKVO_OPTION_PRIOR : 0, nil, ckvots_probe_callback,
                            probes[round * perRound + j].context, ckvots_probe_release, nil))
                }
                local.append(ckvo_unobserve_object(raw, fake(0)))
            }
            stop.value = 1
            statuses.value = local
        }
        hub.did(fake(0), key)

        #expect(statuses.value.count == rounds * (perRound + 1))
        #expect(statuses.value.allSatisfy { $0 == CKVO_OK })
        #expect(hub.flush() == CKVO_OK)
        #expect(probes.allSatisfy { $0.releases == 1 })
        #expect(probes.allSatisfy { $0.callsAfterRelease == 0 })
        #expect(hub.stats().observations == 0)
    }

    @Test func deferredSelfRemovalFromManyDispatchingThreadsReleasesOnce() {
        let hub = TestHub()
        let raw = hub.raw
        let key = hub.key("value")
        let dispatchers = 4
        let rounds = iterations(50, stress: 5_000)
        let probes = (0..<rounds).map { _ in Probe() }
        let tokens = (0..<rounds).map { _ in TokenCell() }
        let deferredOK = AtomicCounter()
        for (probe, token) in zip(probes, tokens) {
            probe.onChange = { _ in
                if ckvo_unobserve_deferred(raw, token.value) == CKVO_OK { deferredOK.next() }
            }
        }

        for (probe, token) in zip(probes, tokens) {
            token.pointer.pointee = hub.mustObserve(probe, object: fake(0), key: key)
            runThreads(dispatchers) { _ in
                for _ in 0..<5 { _ = announce(ckvo_did_change, raw, fake(0), key) }
            }
        }
        _ = hub.mustObserve(Probe(), object: fake(1), key: key)  // a writer op
        #expect(hub.flush() == CKVO_OK)

        #expect(deferredOK.value == UInt64(rounds), "exactly one deferred removal succeeds per observation")
        #expect(probes.allSatisfy { $0.releases == 1 })
        #expect(probes.allSatisfy { $0.callsAfterRelease == 0 })
        // Racing dispatches that had already passed the check may have called it; later ones not.
        #expect(probes.allSatisfy { $0.calls <= UInt64(dispatchers) })
        for probe in probes { probe.onChange = nil }
    }
}

/// The first index whose element satisfies `predicate`, in an array sorted so that the
/// predicate is false up to some point and true after it.
private func firstIndex<T>(in array: [T], where predicate: (T) -> Bool) -> Int {
    var low = 0
    var high = array.count
    while low < high {
        let mid = (low + high) / 2
        if predicate(array[mid]) { high = mid } else { low = mid + 1 }
    }
    return low
}

/// A small deterministic generator, one per thread.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

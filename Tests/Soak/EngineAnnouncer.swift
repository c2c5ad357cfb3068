// EngineAnnouncer.swift — announces C-API changes and checks who was called.
//
// Every announcement is traced (csoak_announce): the callbacks it made, in
// order, each with its registration's clock times. Checked against it:
//   - it returned CKVO_OK and called no more observations than can exist;
//   - no observation was called twice;
//   - none was called whose registration began after the dispatch ended;
//   - observations were called in registration order (ckvo_did_change's
//     contract, wildcard ones included): none after one whose registration
//     began after its own had returned;
//   - every published observation that spans the dispatch (EngineSlot) was
//     called, exactly once.
// The callbacks themselves check values, targets and calls after removal.

#if canImport(Glibc)
import Glibc
#endif
import CKVOCore
import CSoakSupport

final class EngineAnnouncer {
    /// Far above the observations that can exist at once (observer threads x slots, plus
    /// short-lived threads' own): reaching it means the hub called something many times.
    static let capacity = 256

    let world: EngineWorld
    private(set) var tally = LocalTally()
    private let calls = UnsafeMutablePointer<csoak_call_t>.allocate(capacity: EngineAnnouncer.capacity)

    init(world: EngineWorld) {
        self.world = world
    }

    deinit { calls.deallocate() }

    /// A dispatcher thread: announces changes of the shared objects (and, now and then, keyed
    /// broadcasts with a NULL object), half of them with a prior notification, until the round ends.
    func run(_ round: RoundClock, random: inout SoakRandom) {
        while round.running {
            let object = random.percent(15) ? nil : world.objects[random.below(world.objects.count)]
            announce(
                object: object, key: world.keys[random.below(world.keys.count)], withPrior: random.percent(50),
                random: &random)
            if random.percent(10) { sched_yield() }
        }
    }

    /// Announces a change of a random kind of `key` on `object` (NULL: a keyed broadcast),
    /// preceded by a prior notification when `withPrior`. Returns the ids the did-change called.
    @discardableResult
    func announce(object: UnsafeRawPointer?, key: ckvo_key_t, withPrior: Bool, random: inout SoakRandom) -> [UInt64] {
        let kinds = [
            CKVO_KIND_SETTING, CKVO_KIND_SETTING, CKVO_KIND_INSERTION, CKVO_KIND_REMOVAL, CKVO_KIND_REPLACEMENT,
        ]
        let kind = kinds[random.below(kinds.count)]
        let indexes: [Int] =
            kind == CKVO_KIND_SETTING ? [] : Array(Set((0...random.below(3)).map { _ in random.below(16) })).sorted()
        // Both values are always passed: the hub must filter them by each observation's options.
        var old = random.next()
        var new = random.next()
        return withUnsafePointer(to: &old) { oldPointer in
            withUnsafePointer(to: &new) { newPointer in
                indexes.withUnsafeBufferPointer { indexBuffer in
                    var change = ckvo_change_t(
                        object: object, old_value: oldPointer, new_value: newPointer,
                        indexes: indexes.isEmpty ? nil : indexBuffer.baseAddress, index_count: indexes.count,
                        key: key, kind: kind, is_prior: false, is_initial: false)
                    if withPrior {
                        _ = dispatch(&change, prior: true)
                        tally.add(.priorAnnouncements)
                    }
                    tally.add(.announcements)
                    return dispatch(&change, prior: false)
                }
            }
        }
    }

    private func dispatch(_ change: inout ckvo_change_t, prior: Bool) -> [UInt64] {
        var result = csoak_dispatch_t()
        csoak_announce(world.hub, &change, prior, calls, Self.capacity, &result)
        let what = "\(prior ? "ckvo_will_change" : "ckvo_did_change") [\(result.started)...\(result.ended)]"
        verdict.check(result.status == CKVO_OK, "C API: \(what) returned \(result.status)")
        guard result.calls <= Self.capacity else {
            csoak_violation_note(CSOAK_TRACE_OVERFLOW, 0)
            return []
        }
        let traced = UnsafeBufferPointer(start: calls, count: result.calls)
        checkCalls(traced, what: what, ended: result.ended)
        checkSpanning(traced, change: change, prior: prior, started: result.started, ended: result.ended, what: what)
        return traced.map(\.id)
    }

    private func checkCalls(_ calls: UnsafeBufferPointer<csoak_call_t>, what: String, ended: UInt64) {
        for (i, call) in calls.enumerated() {
            verdict.check(
                call.registration_start < ended,
                "C API: \(what) called observation \(call.id), whose registration began at \(call.registration_start)")
            for later in calls[(i + 1)...] {
                verdict.check(later.id != call.id, "C API: \(what) called observation \(call.id) twice")
                verdict.check(
                    later.registered == 0 || later.registered > call.registration_start,
                    "C API: \(what) called observation \(later.id) (registered at \(later.registered)) after "
                        + "\(call.id) (registration began at \(call.registration_start)): not in registration order")
            }
        }
    }

    private func checkSpanning(
        _ calls: UnsafeBufferPointer<csoak_call_t>, change: ckvo_change_t, prior: Bool, started: UInt64,
        ended: UInt64, what: String
    ) {
        for slot in world.slots.joined() {
            guard let (observation, removalStart) = slot.read(),
                spans(
                    observation, removalStart: removalStart, change: change, prior: prior, started: started,
                    ended: ended)
            else { continue }
            tally.add(.engineSpans)
            let times = calls.reduce(0) { $0 + ($1.id == observation.id ? 1 : 0) }
            verdict.check(
                times == 1,
                "C API: \(what) called observation \(observation.id) \(times) times, though it registered at "
                    + "\(observation.registered) and "
                    + (removalStart == EngineSlot.notRemoving
                        ? "was not being removed when the dispatch ended" : "its removal began at \(removalStart)"))
        }
    }

    /// Whether `observation` must be called exactly once by the dispatch [started, ended].
    private func spans(
        _ observation: EngineSlot.Observation, removalStart: UInt64, change: ckvo_change_t, prior: Bool,
        started: UInt64, ended: UInt64
    ) -> Bool {
        guard observation.key == change.key, observation.registered < started else { return false }
        if observation.objectIndex >= 0 && change.object != world.objects[observation.objectIndex] { return false }
        if prior && observation.options & CKVO_OPTION_PRIOR == 0 { return false }
        guard
            removalStart == EngineSlot.notRemoving
                || (removalStart != EngineSlot.removalUnstamped && removalStart > ended)
        else { return false }
        // A removal of its object or owner marked since it registered may have removed it.
        if observation.objectIndex >= 0
            && csoak_removals_marked(CSOAK_TARGET_OBJECT, UInt32(observation.objectIndex)) != observation.objectRemovals
        {
            return false
        }
        return observation.ownerIndex < 0
            || csoak_removals_marked(CSOAK_TARGET_OWNER, UInt32(observation.ownerIndex)) == observation.ownerRemovals
    }
}

// EngineObserver.swift — a C-API observer thread.
//
// Keeps up to EngineWorld.slotsPerObserver observations of the shared objects
// (or of every object) alive, registering and removing them at random: every
// option combination, shared owners or none, now and then one that removes
// itself from its callback (plainly, deferred, or from its initial
// notification). Removal rotates through ckvo_unobserve, ckvo_unobserve_sync
// and ckvo_unobserve_deferred. Checked here:
//   - registration succeeds; the initial notification came exactly once during
//     it when asked for (the callback checks its thread and contents);
//   - ckvo_has_observers is true right after a registration;
//   - registering the same owner, object, key, callback and context again answers
//     CKVO_EEXIST with the same token (and calls no release: the count stays 1);
//   - removal succeeds, or answers "not found" only when a removal of its object
//     or owner, or its own callback, may have removed it first;
//   - the token is dead afterwards: removing it again answers "not found".

#if canImport(Glibc)
import Glibc
#endif
import CKVOCore
import CSoakSupport

final class EngineObserver {
    private struct Live {
        let record: OpaquePointer
        let token: ckvo_token_t
        let slot: EngineSlot?
    }

    private let world: EngineWorld
    private var freeSlots: [EngineSlot]
    private var live: [Live] = []
    private var random: SoakRandom
    private var removals = 0
    private(set) var tally = LocalTally()

    init(world: EngineWorld, index: Int, random: SoakRandom) {
        self.world = world
        self.freeSlots = world.slots[index]
        self.random = random
    }

    /// Registers and removes observations until the round ends, then removes the rest.
    func run(_ round: RoundClock) {
        while round.running {
            if live.count < EngineWorld.slotsPerObserver && (live.isEmpty || random.percent(55)) {
                register()
            } else {
                remove(live.remove(at: random.below(live.count)))
            }
            // Paced so that each observation lives through many dispatches.
            if random.percent(25) { usleep(50) } else { sched_yield() }
        }
        while let last = live.popLast() { remove(last) }
    }

    private func register() {
        let objectIndex = random.percent(70) ? random.below(Int(CSOAK_TARGETS)) : -1
        let ownerIndex = random.percent(60) ? random.below(Int(CSOAK_TARGETS)) : -1
        let options = ckvo_options_t(random.below(16))
        let selfRemoval: csoak_self_removal_t =
            switch random.below(24) {
            case 0: CSOAK_SELF_UNOBSERVE
            case 1: CSOAK_SELF_DEFERRED
            case 2 where options & CKVO_OPTION_INITIAL != 0: CSOAK_SELF_IN_INITIAL
            default: CSOAK_SELF_NONE
            }
        let key = world.keys[random.below(world.keys.count)]
        var spec = csoak_obs_spec_t(
            id: observationIDs.next(), hub: world.hub, object: world.object(objectIndex),
            object_index: Int32(objectIndex),
            owner: world.owner(ownerIndex), owner_index: Int32(ownerIndex), key: key, options: options,
            self_removal: selfRemoval)
        guard let record = csoak_obs_create(&spec) else { fatalError("soak: out of memory") }
        var registration = csoak_registration_t()
        csoak_obs_register(record, &registration)
        guard registration.status == CKVO_OK else {
            verdict.fail("C API: ckvo_observe of observation \(spec.id) returned \(registration.status)")
            csoak_obs_destroy(record)
            return
        }
        tally.add(.engineObservations)

        // "May be gone" is read after what it excuses: a removal cannot excuse what it follows.
        let initials = csoak_obs_initial_calls(record)
        let observed = ckvo_has_observers(world.hub, spec.object, key)
        let mayBeGone = csoak_obs_may_be_gone(record)
        verdict.check(
            options & CKVO_OPTION_INITIAL == 0 ? initials == 0 : (initials == 1 || (mayBeGone && initials == 0)),
            "C API: observation \(spec.id) (options \(options)) got \(initials) initial notifications")
        verdict.check(
            observed || mayBeGone, "C API: ckvo_has_observers is false right after observation \(spec.id) registered")

        if objectIndex < 0 && ownerIndex < 0 && selfRemoval == CSOAK_SELF_NONE && random.percent(25) {
            // Only its own thread can remove this one, so it is certainly still registered.
            var token = ckvo_token_t()
            let status = csoak_obs_register_again(record, &token)
            verdict.check(
                status == CKVO_EEXIST && ckvo_token_equal(token, registration.token),
                "C API: registering observation \(spec.id) again returned \(status) and token \(token), "
                    + "not CKVO_EEXIST and \(registration.token)")
            tally.add(.duplicateRegistrations)
        }

        var slot: EngineSlot?
        if registration.clean && selfRemoval == CSOAK_SELF_NONE {
            slot = freeSlots.popLast()
            slot?.publish(
                EngineSlot.Observation(
                    id: spec.id, objectIndex: objectIndex, ownerIndex: ownerIndex, key: key, options: options,
                    registered: registration.registered, objectRemovals: registration.object_removals,
                    ownerRemovals: registration.owner_removals))
        }
        live.append(Live(record: record, token: registration.token, slot: slot))
    }

    private func remove(_ observation: Live) {
        let how: csoak_removal_t
        removals += 1
        switch removals % 3 {
        case 0:
            how = CSOAK_REMOVE_PLAIN
            tally.add(.plainRemovals)
        case 1:
            how = CSOAK_REMOVE_SYNC
            tally.add(.syncRemovals)
        default:
            how = CSOAK_REMOVE_DEFERRED
            tally.add(.deferredRemovals)
        }
        observation.slot?.beginRemoval()
        let id = csoak_obs_id(observation.record)
        let status = csoak_obs_remove(observation.record, observation.token, how)
        if status == CKVO_ENOENT && csoak_obs_may_be_gone(observation.record) {
            tally.add(.removedByOthers)
        } else {
            verdict.check(status == CKVO_OK, "C API: removing observation \(id) (\(how)) returned \(status)")
        }
        let again = ckvo_unobserve(world.hub, observation.token)
        verdict.check(again == CKVO_ENOENT, "C API: removing observation \(id) a second time returned \(again)")
        if let slot = observation.slot {
            slot.clear()
            freeSlots.append(slot)
        }
        world.retired.retire(observation.record)
    }
}

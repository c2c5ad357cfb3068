// EngineWorld.swift — what the C-API phase's threads share in one round.
//
// Its own hub (so its statistics and its destruction are the phase's alone),
// two keys whose getter serves initial notifications, three shared objects and
// three shared owners (addresses the hub never dereferences; the remover
// thread removes them with ckvo_unobserve_object / ckvo_unobserve_owner), the
// slots where observer threads publish their live observations, and the
// retired records waiting for their release.

import CKVOCore
import CSoakSupport

final class EngineWorld: @unchecked Sendable {  // immutable after init; the hub is thread-safe
    static let slotsPerObserver = 8

    let hub: OpaquePointer
    let keys: [ckvo_key_t]
    let objects: [UnsafeRawPointer]
    let owners: [UnsafeRawPointer]
    let slots: [[EngineSlot]]
    let retired = RetiredRecords()

    private let identities: UnsafeMutableRawPointer

    init(observerThreads: Int) {
        guard let hub = ckvo_hub_create() else { fatalError("soak: ckvo_hub_create failed") }
        self.hub = hub
        keys = ["soak.alpha", "soak.beta"].map { (name: String) in ckvo_key_intern(hub, name, csoak_initial_getter) }
        precondition(!keys.contains(0), "soak: ckvo_key_intern failed")
        let targets = Int(CSOAK_TARGETS)
        let identities = UnsafeMutableRawPointer.allocate(byteCount: 2 * targets, alignment: 1)
        self.identities = identities
        objects = (0..<targets).map { UnsafeRawPointer(identities + $0) }
        owners = (0..<targets).map { UnsafeRawPointer(identities + targets + $0) }
        slots = (0..<observerThreads).map { _ in (0..<Self.slotsPerObserver).map { _ in EngineSlot() } }
    }

    /// The shared object at `index`, or NULL (wildcard) for -1.
    func object(_ index: Int) -> UnsafeRawPointer? { index < 0 ? nil : objects[index] }

    /// The shared owner at `index`, or NULL for -1.
    func owner(_ index: Int) -> UnsafeRawPointer? { index < 0 ? nil : owners[index] }

    /// Ends the round: every observation must be gone and its context released exactly once.
    ///
    /// Call after every thread using the world has stopped and removed its observations.
    /// A registration and a removal drain removals still queued by ckvo_unobserve_deferred,
    /// the flush releases everything removed, and the hub's destruction must release nothing
    /// more: each record's release count is read only after it.
    func finish() {
        var spec = csoak_obs_spec_t(
            id: observationIDs.next(), hub: hub, object: nil, object_index: -1, owner: nil, owner_index: -1,
            key: keys[0], options: 0, self_removal: CSOAK_SELF_NONE)
        guard let drain = csoak_obs_create(&spec) else { fatalError("soak: out of memory") }
        var registration = csoak_registration_t()
        csoak_obs_register(drain, &registration)
        verdict.check(registration.status == CKVO_OK, "C API: final ckvo_observe failed: \(registration.status)")
        verdict.check(
            csoak_obs_remove(drain, registration.token, CSOAK_REMOVE_PLAIN) == CKVO_OK,
            "C API: final ckvo_unobserve failed")
        retired.retire(drain)
        verdict.check(ckvo_hub_flush(hub) == CKVO_OK, "C API: ckvo_hub_flush failed at the end of the round")
        var stats = ckvo_hub_stats_t()
        verdict.check(ckvo_hub_stats(hub, &stats) == CKVO_OK, "C API: ckvo_hub_stats failed")
        verdict.check(
            stats.observations == 0 && stats.pending_releases == 0,
            "C API: after every removal and a flush the hub still has \(stats.observations) observations "
                + "and \(stats.pending_releases) pending releases")
        verdict.check(ckvo_hub_destroy(hub) == CKVO_OK, "C API: ckvo_hub_destroy failed")
        retired.finish()
        identities.deallocate()
    }
}

/// Unique observation ids, for both phases (an id also names its record in failures).
let observationIDs = IDSource()

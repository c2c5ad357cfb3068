// EngineRemover.swift — the C-API phase's remover thread.
//
// Every two milliseconds or so: ckvo_unobserve_object of a shared object (it "died"),
// ckvo_unobserve_owner of a shared owner (it "died"), or ckvo_hub_flush, all
// while the other threads register, remove and dispatch. Each object or owner
// removal is numbered and stamped (removals.c), so observers and callbacks can
// tell which observations it may have removed and which it certainly had.
// It also sweeps the retired records (RetiredRecords).

#if canImport(Glibc)
import Glibc
#endif
import CKVOCore
import CSoakSupport

struct EngineRemover {
    let world: EngineWorld
    var random: SoakRandom
    private(set) var tally = LocalTally()

    init(world: EngineWorld, random: SoakRandom) {
        self.world = world
        self.random = random
    }

    mutating func run(_ round: RoundClock) {
        while round.running {
            usleep(UInt32(500 + random.below(2_500)))
            switch random.below(10) {
            case 0..<4:
                remove(CSOAK_TARGET_OBJECT, random.below(Int(CSOAK_TARGETS)))
                tally.add(.objectRemovals)
            case 4..<8:
                remove(CSOAK_TARGET_OWNER, random.below(Int(CSOAK_TARGETS)))
                tally.add(.ownerRemovals)
            default:
                let status = ckvo_hub_flush(world.hub)
                verdict.check(status == CKVO_OK, "C API: ckvo_hub_flush returned \(status)")
                tally.add(.flushes)
            }
            world.retired.sweep()
        }
    }

    private func remove(_ target: csoak_target_t, _ index: Int) {
        let number = csoak_removal_begin(target, UInt32(index))
        let status =
            target == CSOAK_TARGET_OBJECT
            ? ckvo_unobserve_object(world.hub, world.objects[index])
            : ckvo_unobserve_owner(world.hub, world.owners[index])
        csoak_removal_end(target, UInt32(index), number, csoak_clock_next())
        let call = target == CSOAK_TARGET_OBJECT ? "ckvo_unobserve_object" : "ckvo_unobserve_owner"
        verdict.check(status == CKVO_OK || status == CKVO_ENOENT, "C API: \(call) returned \(status)")
    }
}

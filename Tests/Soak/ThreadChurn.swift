// ThreadChurn.swift — short-lived threads that do one thing and exit.
//
// A spawner keeps up to three short-lived threads running (each joined when
// done), so the engine's per-thread reader records are registered and recycled
// all the time. Each one does one of:
//   - registers a C-API observation of its own private object (and owner),
//     announces a change of it, which must call that observation exactly once
//     (plus whatever wildcard observations span it, checked as usual), then
//     removes it — nothing else can, so removal must succeed;
//   - announces a change of a shared object (checked as any dispatch);
//   - creates a subject, observes it with a token, changes it three times and
//     ends the observation with invalidateAndWait: exactly changes 1...3 must
//     have been delivered; the subject dies as the thread exits;
//   - posts the shared name with no sender;
//   - nothing at all.

#if canImport(Glibc)
import Glibc
#endif
import CKVOCore
import CSoakSupport
import SwiftKVO

struct ThreadChurn {
    let world: EngineWorld
    var random: SoakRandom
    private(set) var tally = LocalTally()

    init(world: EngineWorld, random: SoakRandom) {
        self.world = world
        self.random = random
    }

    mutating func run(_ round: RoundClock) {
        var running: [WorkerThread] = []
        while round.running {
            if running.count == 3 { running.removeFirst().join() }
            let task = random.below(5)
            let seed = random.next()
            let world = self.world
            running.append(
                WorkerThread {
                    var random = SoakRandom(seed: seed, stream: 0)
                    var counts = LocalTally()
                    switch task {
                    case 0: Self.observePrivately(world, &random, &counts)
                    case 1: Self.announceShared(world, &random, &counts)
                    case 2: Self.observeSubject(&random, &counts)
                    case 3:
                        post(from: nil, trace: SwiftTrace())
                        counts.add(.posts)
                    default: break
                    }
                    Tally.shared.merge(counts)
                })
            tally.add(.threadsStarted)
            usleep(UInt32(100 + random.below(400)))
        }
        running.forEach { $0.join() }
    }

    private static func observePrivately(_ world: EngineWorld, _ random: inout SoakRandom, _ tally: inout LocalTally) {
        let identity = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        defer { identity.deallocate() }
        let options = ckvo_options_t(random.below(16))
        let key = world.keys[random.below(world.keys.count)]
        var spec = csoak_obs_spec_t(
            id: observationIDs.next(), hub: world.hub, object: identity, object_index: -1,
            owner: random.percent(50) ? identity : nil, owner_index: -1, key: key, options: options,
            self_removal: CSOAK_SELF_NONE)
        guard let record = csoak_obs_create(&spec) else { fatalError("soak: out of memory") }
        var registration = csoak_registration_t()
        csoak_obs_register(record, &registration)
        guard registration.status == CKVO_OK else {
            verdict.fail("C API: ckvo_observe on a short-lived thread returned \(registration.status)")
            csoak_obs_destroy(record)
            return
        }
        tally.add(.engineObservations)
        let announcer = EngineAnnouncer(world: world)
        let called = announcer.announce(object: identity, key: key, withPrior: random.percent(50), random: &random)
        tally.merge(announcer.tally)
        let times = called.filter { $0 == spec.id }.count
        verdict.check(times == 1, "C API: a short-lived thread's own change called its observation \(times) times")
        let how = [CSOAK_REMOVE_PLAIN, CSOAK_REMOVE_SYNC, CSOAK_REMOVE_DEFERRED][random.below(3)]
        let status = csoak_obs_remove(record, registration.token, how)
        verdict.check(status == CKVO_OK, "C API: removal (\(how)) on a short-lived thread returned \(status)")
        world.retired.retire(record)
    }

    private static func announceShared(_ world: EngineWorld, _ random: inout SoakRandom, _ tally: inout LocalTally) {
        let announcer = EngineAnnouncer(world: world)
        announcer.announce(
            object: world.objects[random.below(world.objects.count)], key: world.keys[random.below(world.keys.count)],
            withPrior: random.percent(50), random: &random)
        tally.merge(announcer.tally)
    }

    private static func observeSubject(_ random: inout SoakRandom, _ tally: inout LocalTally) {
        let subject = Subject()
        let options: ObservingOptions = [.old, .new, .prior]
        let record = DeliveryRecord(
            "short-lived thread's token observation", source: .sequence(subject.ledger.value), options: options,
            ledger: subject.ledger)
        let receiver = Receiver(record)
        guard let token = try? subject.observe(\.value, options: options, changeHandler: { receiver.value($0, $1) }) else {
            verdict.check(false, "Swift: \(record.what) \(record.id) failed to register")
            return
        }
        record.registered()
        let trace = SwiftTrace()
        for _ in 0..<3 {
            let number = subject.ledger.value.begin()
            trace.run("change \(number) of a value", ordered: true) { subject.value = Stamp(number: number) }
            subject.ledger.value.end(number)
            tally.add(.swiftChanges)
        }
        record.end(strict: true) {
            do {
                try token.invalidateAndWait()
            } catch {
                verdict.fail("Swift: invalidateAndWait on a short-lived thread threw \(error)")
            }
        }
        tally.add(.tokenObservations)
    }
}

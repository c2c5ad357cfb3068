// Round.swift — one round: every workload on its own threads until the round's
// time is up (or something failed), then the teardown and its checks.
//
// Threads: C API — 2 dispatchers, 2 observers, 1 remover; Swift layer — 2
// mutators, 1 token observer, 1 controller observer, 1 hub listener, 1
// graveyard; 1 spawner of short-lived threads. The main thread watches for
// violations found in C callbacks.
//
// Teardown, once every worker has stopped (each removes or hands over what it
// still has): the graveyard and the subject pool are emptied, then each layer's
// hub must end empty — no observation left, nothing waiting for release —
// every context released exactly once, and every subject, observer and
// delivery record gone.

#if canImport(Glibc)
import Glibc
#endif
import CKVOCore
import SwiftKVO

struct Round {
    let seconds: Double
    let seed: UInt64
    /// 0 for the warm-up round, 1 for the main one (each worker's random stream differs).
    let number: UInt64

    func run(_ violations: inout EngineViolations) {
        let round = RoundClock(seconds: seconds)
        let world = EngineWorld(observerThreads: 2)
        let pool = SubjectPool(size: 12)
        let graveyard = Graveyard()
        var streams: UInt64 = number << 32
        func random() -> SoakRandom {
            streams += 1
            return SoakRandom(seed: seed, stream: streams)
        }

        var threads: [WorkerThread] = []
        for _ in 0..<2 {
            let random = random()
            threads.append(
                WorkerThread {
                    var random = random
                    let announcer = EngineAnnouncer(world: world)
                    announcer.run(round, random: &random)
                    Tally.shared.merge(announcer.tally)
                })
        }
        for index in 0..<2 {
            let random = random()
            threads.append(
                WorkerThread {
                    let observer = EngineObserver(world: world, index: index, random: random)
                    observer.run(round)
                    Tally.shared.merge(observer.tally)
                })
        }
        let removerRandom = random()
        threads.append(
            WorkerThread {
                var remover = EngineRemover(world: world, random: removerRandom)
                remover.run(round)
                Tally.shared.merge(remover.tally)
            })
        for _ in 0..<2 {
            let random = random()
            threads.append(
                WorkerThread {
                    let mutator = Mutator(pool: pool, graveyard: graveyard, random: random)
                    mutator.run(round)
                    Tally.shared.merge(mutator.tally)
                })
        }
        let tokenRandom = random()
        threads.append(
            WorkerThread {
                let observer = TokenObserver(pool: pool, random: tokenRandom)
                observer.run(round)
                Tally.shared.merge(observer.tally)
            })
        let controllerRandom = random()
        threads.append(
            WorkerThread {
                let observer = ControllerObserver(pool: pool, graveyard: graveyard, random: controllerRandom)
                observer.run(round)
                Tally.shared.merge(observer.tally)
            })
        let listenerRandom = random()
        threads.append(
            WorkerThread {
                let listener = HubListener(pool: pool, graveyard: graveyard, random: listenerRandom)
                listener.run(round)
                Tally.shared.merge(listener.tally)
            })
        let graveyardThread = WorkerThread { graveyard.run() }
        let churnRandom = random()
        threads.append(
            WorkerThread {
                var churn = ThreadChurn(world: world, random: churnRandom)
                churn.run(round)
                Tally.shared.merge(churn.tally)
            })

        let backlog = BacklogWatch(hubs: [world.hub, ckvo_hub_default()])
        while round.running {
            usleep(20_000)
            violations.report()
        }
        threads.forEach { $0.join() }
        backlog.finish()
        graveyard.close()
        graveyardThread.join()
        graveyard.dropAll()
        pool.drain()
        finishSwiftLayer()
        world.finish()
        violations.report()
    }

    /// The Swift layer's end of round, on the default hub.
    ///
    /// Hub observers that died while registered for every sender are removed when a post meets
    /// them (deferred), so one more post meets them; a registration and a removal drain the
    /// removals that queued; the flush releases everything removed, which checks the last
    /// delivery records.
    private func finishSwiftLayer() {
        post(from: nil, trace: SwiftTrace())
        do {
            let drain = Subject()
            let token = try? drain.observe(\.value) { _, _ in }
            verdict.check(token?.invalidate() == true, "Swift: the draining registration failed")
        }
        let hub = ckvo_hub_default()
        verdict.check(ckvo_hub_flush(hub) == CKVO_OK, "Swift: ckvo_hub_flush of the default hub failed")
        var stats = ckvo_hub_stats_t()
        _ = ckvo_hub_stats(hub, &stats)
        verdict.check(
            stats.observations == 0 && stats.pending_releases == 0,
            "Swift: at the end of the round the default hub still has \(stats.observations) observations and "
                + "\(stats.pending_releases) pending releases")
        let subjects = subjectPopulation.entered - subjectPopulation.left
        let observers = observerPopulation.entered - observerPopulation.left
        let records = recordPopulation.entered - recordPopulation.left
        verdict.check(subjects == 0, "Swift: \(subjects) subjects still alive at the end of the round")
        verdict.check(observers == 0, "Swift: \(observers) observers still alive at the end of the round")
        verdict.check(records == 0, "Swift: \(records) observations whose handler was never released")
    }
}

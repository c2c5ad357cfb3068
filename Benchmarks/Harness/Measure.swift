// Measure.swift — warm-up, calibration, samples, and their summary.

import CBenchFloor

/// How long and how often to measure.
struct SamplingPlan: Sendable {
    var samples: Int
    /// Minimum length of one sample, in seconds.
    var minSampleSeconds: Double
    /// Length of the warm-up, which also calibrates the iteration count.
    var warmUpSeconds: Double
}

/// Median and spread of a set of samples (ns per unit).
struct Stats: Sendable, Codable {
    var median: Double
    var min: Double
    var max: Double
    var samples: [Double]

    init(_ values: [Double]) {
        let sorted = values.sorted()
        samples = values
        min = sorted.first ?? .nan
        max = sorted.last ?? .nan
        if sorted.isEmpty {
            median = .nan
        } else if sorted.count % 2 == 1 {
            median = sorted[sorted.count / 2]
        } else {
            median = (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
    }
}

/// A measurement of one fixture.
struct Measurement: Sendable {
    var nsPerUnit: Stats
    var iterationsPerSample: Int
    /// Callbacks counted minus callbacks expected, over all samples (0 when all is well;
    /// nil when the fixture's units are not callbacks).
    var callbackDiscrepancy: Int?
}

enum Sampler {
    /// Warm-up: runs growing batches until one takes `warmUpSeconds`; returns seconds per iteration.
    static func warmUp(_ fixture: any Fixture, plan: SamplingPlan) -> Double {
        var iterations = 1
        while true {
            let t0 = nowNanoseconds()
            fixture.run(iterations)
            let seconds = Double(nowNanoseconds() - t0) / 1e9
            if seconds >= plan.warmUpSeconds || iterations >= 1 << 40 {
                _ = cbench_take_count()
                return seconds / Double(iterations)
            }
            // Grow towards the warm-up length, at most 10× per step.
            let factor = seconds > 0 ? min(10, plan.warmUpSeconds / seconds * 1.2) : 10
            iterations = max(iterations + 1, Int(Double(iterations) * factor))
        }
    }

    /// Iterations that make one sample at least `plan.minSampleSeconds` long.
    static func iterationsPerSample(secondsPerIteration: Double, plan: SamplingPlan) -> Int {
        let wanted = plan.minSampleSeconds * 1.05 / max(secondsPerIteration, 1e-12)
        return max(1, Int(wanted.rounded(.up)))
    }

    /// One timed sample of `iterations` iterations on this thread: ns per unit, and callbacks
    /// counted minus expected.
    static func sample(_ fixture: any Fixture, iterations: Int) -> (nsPerUnit: Double, discrepancy: Int) {
        let units = iterations * fixture.unitsPerIteration
        _ = cbench_take_count()
        let t0 = nowNanoseconds()
        fixture.run(iterations)
        let elapsed = Double(nowNanoseconds() - t0)
        let counted = Int(cbench_take_count())
        return (elapsed / Double(units), counted - units)
    }

    /// Warms up, calibrates, and takes `plan.samples` samples of each fixture on this thread.
    /// Samples are interleaved (sample 1 of every fixture, then sample 2, …), so a change in
    /// machine load during the run hits every peer alike instead of whichever ran then.
    static func measureInterleaved(_ fixtures: [any Fixture], plan: SamplingPlan) -> [Measurement] {
        let iterations = fixtures.map { fixture in
            iterationsPerSample(secondsPerIteration: warmUp(fixture, plan: plan), plan: plan)
        }
        var values = Array(repeating: [Double](), count: fixtures.count)
        var discrepancies = Array(repeating: 0, count: fixtures.count)
        for _ in 0..<plan.samples {
            for (i, fixture) in fixtures.enumerated() {
                let (ns, discrepancy) = sample(fixture, iterations: iterations[i])
                values[i].append(ns)
                discrepancies[i] += discrepancy
            }
        }
        return fixtures.indices.map { i in
            Measurement(
                nsPerUnit: Stats(values[i]), iterationsPerSample: iterations[i],
                callbackDiscrepancy: fixtures[i].unitsAreCallbacks ? discrepancies[i] : nil)
        }
    }

    /// Warms up, calibrates, and takes `plan.samples` samples on this thread.
    static func measure(_ fixture: any Fixture, plan: SamplingPlan) -> Measurement {
        measureInterleaved([fixture], plan: plan)[0]
    }

    /// Contention: the same fixture on one thread and on `threads` threads at once, each
    /// thread doing the same iterations (on its own object, for a `ThreadIndexedFixture`).
    /// One-thread and N-thread samples alternate, so a change in machine load hits both
    /// sides of the ratio alike. N-thread ns per unit is wall time ÷ units done by all
    /// threads together.
    static func measureContention(_ fixture: any Fixture, threads: Int, plan: SamplingPlan)
        -> (single: Measurement, multi: Measurement)
    {
        let perIteration = warmUp(fixture, plan: plan)
        let iterations = iterationsPerSample(secondsPerIteration: perIteration, plan: plan)
        let unitsPerThread = iterations * fixture.unitsPerIteration
        // Warm-up on all threads.
        _ = runOnThreads(threads) { thread in run(fixture, max(1, iterations / 10), thread: thread) }
        var single: [Double] = [], multi: [Double] = []
        var singleDiscrepancy = 0, multiDiscrepancy = 0
        for _ in 0..<plan.samples {
            _ = cbench_take_count()
            let t0 = nowNanoseconds()
            fixture.run(iterations)
            let elapsed = Double(nowNanoseconds() - t0)
            singleDiscrepancy += Int(cbench_take_count()) - unitsPerThread
            single.append(elapsed / Double(unitsPerThread))

            let result = runOnThreads(threads) { thread in run(fixture, iterations, thread: thread) }
            multiDiscrepancy += Int(result.callbacks) - threads * unitsPerThread
            multi.append(result.wallSeconds * 1e9 / Double(threads * unitsPerThread))
        }
        let checked = fixture.unitsAreCallbacks
        return (
            Measurement(
                nsPerUnit: Stats(single), iterationsPerSample: iterations,
                callbackDiscrepancy: checked ? singleDiscrepancy : nil),
            Measurement(
                nsPerUnit: Stats(multi), iterationsPerSample: iterations,
                callbackDiscrepancy: checked ? multiDiscrepancy : nil)
        )
    }

    /// `fixture.run` on thread `thread` (its own object, for a `ThreadIndexedFixture`).
    private static func run(_ fixture: any Fixture, _ iterations: Int, thread: Int) {
        if let perThread = fixture as? any ThreadIndexedFixture {
            perThread.run(iterations, thread: thread)
        } else {
            fixture.run(iterations)
        }
    }
}

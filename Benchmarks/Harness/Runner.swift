// Runner.swift — runs the selected workloads on the selected peers.

import CBenchFloor
import Foundation

/// Progress and warnings go to stderr; stdout carries only results.
func progress(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

struct Runner {
    var peers: [any Peer]
    var reference: String
    var plan: SamplingPlan
    var threads: Int
    var quick: Bool
    var filters: [String]

    /// Whether `name` ("workload/peer") is selected by the filters (all when none).
    func selected(_ name: String) -> Bool {
        if filters.isEmpty { return true }
        let lower = name.lowercased()
        return filters.contains { lower.contains($0.lowercased()) }
    }

    func run() -> (workloads: [WorkloadResult], extras: [ExtraResult]) {
        var workloads: [WorkloadResult] = []
        for spec in WorkloadSpec.plan(quick: quick, threads: threads) {
            let chosen = peers.filter { selected("\(spec.name)/\($0.id)") }
            if chosen.isEmpty { continue }
            // The reference runs whenever its workload does, so speedups can be computed.
            var toRun = chosen
            if !toRun.contains(where: { $0.id == reference }),
                let ref = peers.first(where: { $0.id == reference })
            {
                toRun.insert(ref, at: 0)
            }
            // Keep table order.
            toRun = peers.filter { peer in toRun.contains { $0.id == peer.id } }
            var results: [PeerResult]
            switch spec.kind {
            case .memory, .contention, .contentionOwnObjects, .contentionReadingSender:
                results = toRun.map { run(spec, on: $0) }
            case .sparse: results = runSparse(spec, on: toRun)
            default: results = runInterleaved(spec, on: toRun)
            }
            computeSpeedups(&results, kind: spec.kind)
            workloads.append(WorkloadResult(
                name: spec.name, kind: spec.kind, size: spec.size, title: spec.title, unit: spec.unit,
                threads: [.contention, .contentionOwnObjects, .contentionReadingSender].contains(spec.kind)
                    ? threads : nil,
                results: results))
        }
        return (workloads, runExtras())
    }

    private func run(_ spec: WorkloadSpec, on peer: any Peer) -> PeerResult {
        var result = PeerResult(peer: peer.id, title: peer.title)
        let label = "[\(spec.name)] \(peer.id)"
        switch spec.kind {
        case .memory:
            guard let oneKey = peer.measureMemory(observations: spec.size, perObject: false) else {
                progress("\(label): —")
                return result
            }
            result.bytesPerObservationOneKey = oneKey.bytesPerObservation
            result.bytesPerObservationPerObject =
                peer.measureMemory(observations: spec.size, perObject: true)?.bytesPerObservation
            progress("\(label): \(format(oneKey.bytesPerObservation)) B/observation (one key)")
            return result
        case .contention, .contentionOwnObjects, .contentionReadingSender:
            let made: (any Fixture)? =
                switch spec.kind {
                case .contention: peer.makeContention(observers: spec.size)
                case .contentionReadingSender: peer.makeContentionReadingSender(observers: spec.size)
                default: peer.makeContentionOwnObjects(observers: spec.size, threads: threads)
                }
            guard let fixture = made else {
                progress("\(label): —")
                return result
            }
            defer { fixture.tearDown() }
            let (single, multi) = Sampler.measureContention(fixture, threads: threads, plan: plan)
            result.singleThreadNsPerUnit = single.nsPerUnit
            result.nsPerUnit = multi.nsPerUnit
            result.iterationsPerSample = multi.iterationsPerSample
            result.callbackDiscrepancy = combine(single.callbackDiscrepancy, multi.callbackDiscrepancy)
            result.scalingRatio = single.nsPerUnit.median / multi.nsPerUnit.median
            progress(
                "\(label): 1 thread \(format(single.nsPerUnit.median)) ns, \(threads) threads "
                    + "\(format(multi.nsPerUnit.median)) ns aggregate, ratio \(format(result.scalingRatio!))")
            warnIfMiscounted(label, result.callbackDiscrepancy)
            return result
        default:
            return runInterleaved(spec, on: [peer])[0]
        }
    }

    /// The single-threaded timing workloads: every peer's fixture is built first, then
    /// sampled in turn (see `Sampler.measureInterleaved`). Churn with a dispatcher is the
    /// exception: each fixture's dispatcher thread runs from creation to tearDown, and
    /// several at once would compete, so those are built, measured and torn down one by one.
    private func runInterleaved(_ spec: WorkloadSpec, on peers: [any Peer]) -> [PeerResult] {
        if spec.kind == .churnWithDispatcher && peers.count > 1 {
            return peers.flatMap { runInterleaved(spec, on: [$0]) }
        }
        var results = peers.map { PeerResult(peer: $0.id, title: $0.title) }
        var fixtures: [(index: Int, fixture: any Fixture)] = []
        for (i, peer) in peers.enumerated() {
            let fixture: (any Fixture)?
            switch spec.kind {
            case .fanOut: fixture = peer.makeFanOut(observers: spec.size)
            case .manySubjects: fixture = peer.makeManySubjects(subjects: spec.size)
            case .noObservers: fixture = peer.makeNoObserverSetter()
            case .churn: fixture = peer.makeChurn(observers: spec.size, concurrentDispatcher: false)
            case .churnWithDispatcher:
                fixture = peer.makeChurn(observers: spec.size, concurrentDispatcher: true)
            case .memory, .contention, .contentionOwnObjects, .contentionReadingSender, .sparse: fixture = nil
            }
            if let fixture {
                fixtures.append((i, fixture))
            } else {
                progress("[\(spec.name)] \(peer.id): —")
            }
        }
        let measurements = Sampler.measureInterleaved(fixtures.map(\.fixture), plan: plan)
        for (entry, measurement) in zip(fixtures, measurements) {
            results[entry.index].nsPerUnit = measurement.nsPerUnit
            results[entry.index].iterationsPerSample = measurement.iterationsPerSample
            results[entry.index].callbackDiscrepancy = measurement.callbackDiscrepancy
            let label = "[\(spec.name)] \(peers[entry.index].id)"
            progress("\(label): \(format(measurement.nsPerUnit.median)) ns/\(spec.unit)")
            warnIfMiscounted(label, measurement.callbackDiscrepancy)
        }
        for entry in fixtures { entry.fixture.tearDown() }
        return results
    }

    /// Sparse observation: each peer's fixture with one object in a hundred observed and the
    /// same objects with none observed, sampled interleaved, and the peer's no-observer setter
    /// (one object). The setters are measured first, before any sparse fixture exists: SwiftKVO
    /// tracks observation per class and property, so a setter measured while another object of
    /// its class is observed would be the sparse case itself. The ratios are the sparse fixture
    /// ÷ each of the others.
    private func runSparse(_ spec: WorkloadSpec, on peers: [any Peer]) -> [PeerResult] {
        var results = peers.map { PeerResult(peer: $0.id, title: $0.title) }
        var setters: [(index: Int, fixture: any Fixture)] = []
        for (i, peer) in peers.enumerated() {
            if let setter = peer.makeNoObserverSetter() { setters.append((i, setter)) }
        }
        let setterMeasurements = Sampler.measureInterleaved(setters.map(\.fixture), plan: plan)
        for (entry, measurement) in zip(setters, setterMeasurements) {
            results[entry.index].setterNsPerUnit = measurement.nsPerUnit
            entry.fixture.tearDown()
        }

        var fixtures: [(index: Int, sparse: any Fixture, none: any Fixture)] = []
        for (i, peer) in peers.enumerated() {
            if let sparse = peer.makeSparse(subjects: spec.size, observed: true),
                let none = peer.makeSparse(subjects: spec.size, observed: false)
            {
                fixtures.append((i, sparse, none))
            } else {
                progress("[\(spec.name)] \(peer.id): —")
            }
        }
        let measurements = Sampler.measureInterleaved(fixtures.flatMap { [$0.sparse, $0.none] }, plan: plan)
        for (n, entry) in fixtures.enumerated() {
            let sparse = measurements[2 * n], none = measurements[2 * n + 1]
            var result = results[entry.index]
            result.nsPerUnit = sparse.nsPerUnit
            result.iterationsPerSample = sparse.iterationsPerSample
            result.noObserverNsPerUnit = none.nsPerUnit
            result.sparseRatio = sparse.nsPerUnit.median / none.nsPerUnit.median
            result.setterRatio = result.setterNsPerUnit.map { sparse.nsPerUnit.median / $0.median }
            results[entry.index] = result
            progress(
                "[\(spec.name)] \(peers[entry.index].id): \(format(sparse.nsPerUnit.median)) ns/set, "
                    + "none observed \(format(none.nsPerUnit.median)) ns, no-observer setter "
                    + (result.setterNsPerUnit.map { "\(format($0.median)) ns" } ?? "—"))
        }
        for entry in fixtures {
            entry.sparse.tearDown()
            entry.none.tearDown()
        }
        return results
    }

    private func combine(_ a: Int?, _ b: Int?) -> Int? {
        if a == nil && b == nil { return nil }
        return (a ?? 0) + (b ?? 0)
    }

    private func warnIfMiscounted(_ label: String, _ discrepancy: Int?) {
        if let discrepancy, discrepancy != 0 {
            progress("WARNING \(label): \(discrepancy) callbacks more than expected (negative: missing)")
        }
    }

    private func computeSpeedups(_ results: inout [PeerResult], kind: WorkloadKind) {
        func value(_ r: PeerResult) -> Double? {
            kind == .memory ? r.bytesPerObservationOneKey : r.nsPerUnit?.median
        }
        guard let ref = results.first(where: { $0.peer == reference }), let refValue = value(ref),
            refValue > 0
        else { return }
        for i in results.indices where results[i].peer != reference {
            if let v = value(results[i]) { results[i].speedup = v / refValue }
        }
    }

    /// Measurements only the SwiftKVO C API has.
    private func runExtras() -> [ExtraResult] {
        var extras: [ExtraResult] = []
        let peer = "swiftkvo-c"
        if selected("extras/has-observers/\(peer)") {
            let fixture = SwiftKVOCPeer.HasObserversUnobserved()
            let m = Sampler.measure(fixture, plan: plan)
            fixture.tearDown()
            progress("[extras/has-observers] \(format(m.nsPerUnit.median)) ns")
            extras.append(ExtraResult(
                name: "extras/has-observers", peer: peer, value: m.nsPerUnit.median, unit: "ns/call",
                note: "ckvo_has_observers on a key nobody observes (another key of the object is observed); "
                    + "median of \(plan.samples), min \(format(m.nsPerUnit.min)), max \(format(m.nsPerUnit.max))"))
        }
        let count = quick ? 100_000 : 1_000_000
        if selected("extras/register-\(count)/\(peer)") {
            let r = SwiftKVOCPeer.registerMany(count)
            progress("[extras/register-\(count)] \(format(r.registerSeconds)) s")
            extras.append(ExtraResult(
                name: "extras/register-\(count)", peer: peer, value: r.registerSeconds, unit: "s",
                note: "ckvo_observe × \(count.formatted3) on one key, total (one run); "
                    + "unobserving them all took \(format(r.unobserveSeconds)) s"))
        }
        return extras
    }
}

/// Three significant digits, no exponent for the usual ranges.
func format(_ value: Double) -> String {
    if value.isNaN { return "nan" }
    let magnitude = abs(value)
    let decimals: Int
    switch magnitude {
    case 100...: decimals = 0
    case 10..<100: decimals = 1
    case 1..<10: decimals = 2
    default: decimals = 3
    }
    return formatFixed(value, decimals: decimals)
}

/// `value` with `decimals` digits after the point (no Foundation needed).
func formatFixed(_ value: Double, decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded()
    let negative = rounded < 0
    let integer = Int(abs(rounded))
    let whole = integer / Int(scale)
    let fraction = integer % Int(scale)
    var text = whole.formatted3
    if decimals > 0 {
        var digits = String(fraction)
        while digits.count < decimals { digits = "0" + digits }
        text += "." + digits
    }
    return negative ? "-" + text : text
}

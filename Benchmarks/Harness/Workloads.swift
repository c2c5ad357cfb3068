// Workloads.swift — what is measured, and the results it produced.

/// A workload: a named way of exercising each peer.
enum WorkloadKind: String, Codable, Sendable {
    case fanOut = "fan-out"
    case manySubjects = "many-subjects"
    case noObservers = "setter-no-observers"
    case sparse = "sparse-observation"
    case contention
    case contentionOwnObjects = "contention-own-objects"
    case contentionReadingSender = "contention-reading-sender"
    case churn
    case churnWithDispatcher = "churn+dispatcher"
    case memory
}

/// One table's worth of measurements.
struct WorkloadSpec: Sendable {
    var kind: WorkloadKind
    /// The size parameter (observers, subjects, or observations).
    var size: Int
    /// Stable name used by `--filter` and in the JSON file, e.g. "fan-out/100".
    var name: String
    /// Table heading.
    var title: String
    /// What one unit is ("callback", "set", "pair", "observation").
    var unit: String

    static func plan(quick: Bool, threads: Int) -> [WorkloadSpec] {
        var specs: [WorkloadSpec] = []
        for n in [1, 10, 100, 1000] {
            specs.append(WorkloadSpec(
                kind: .fanOut, size: n, name: "fan-out/\(n)",
                title: "Fan-out: \(n) observer\(n == 1 ? "" : "s") of one key", unit: "callback"))
        }
        specs.append(WorkloadSpec(
            kind: .manySubjects, size: 10_000, name: "many-subjects/10000",
            title: "Many subjects: 10,000 objects × 1 observer, changed round-robin", unit: "callback"))
        specs.append(WorkloadSpec(
            kind: .noObservers, size: 0, name: "setter-no-observers",
            title: "Setter with no observers", unit: "set"))
        specs.append(WorkloadSpec(
            kind: .sparse, size: 10_000, name: "sparse-observation/10000",
            title: "Sparse observation: 10,000 objects of one class, 1 in 100 observed, "
                + "the unobserved ones set round-robin", unit: "set"))
        specs.append(WorkloadSpec(
            kind: .contention, size: 10, name: "contention/10",
            title: "Contention: \(threads) threads changing one key with 10 observers", unit: "callback"))
        specs.append(WorkloadSpec(
            kind: .contentionOwnObjects, size: 10, name: "contention-own-objects/10",
            title: "Contention: \(threads) threads, each changing its own object; the same 10 observers "
                + "observe every object", unit: "callback"))
        specs.append(WorkloadSpec(
            kind: .contentionReadingSender, size: 10, name: "contention-reading-sender/10",
            title: "Contention, named notifications: \(threads) threads posting to the same 10 observers; "
                + "each callback reads the notification's sender", unit: "callback"))
        specs.append(WorkloadSpec(
            kind: .churn, size: 100, name: "churn/100",
            title: "Churn: observe + unobserve on a key with 100 observers", unit: "pair"))
        specs.append(WorkloadSpec(
            kind: .churnWithDispatcher, size: 100, name: "churn+dispatcher/100",
            title: "Churn with a concurrent dispatcher thread changing the key non-stop", unit: "pair"))
        let observations = quick ? 10_000 : 100_000
        specs.append(WorkloadSpec(
            kind: .memory, size: observations, name: "memory/\(observations)",
            title: "Memory per observation: \(observations.formatted3) observations (heap bytes, mallinfo2)",
            unit: "observation"))
        return specs
    }
}

/// One peer's result for one workload.
struct PeerResult: Codable, Sendable {
    var peer: String
    var title: String
    /// nil when the peer does not support the workload.
    var nsPerUnit: Stats?
    var iterationsPerSample: Int?
    var callbackDiscrepancy: Int?
    /// Contention: ns per callback on one thread, and the N-thread throughput ÷ one thread's.
    var singleThreadNsPerUnit: Stats?
    var scalingRatio: Double?
    /// Sparse observation: ns per set of the same objects when none of them is observed, and
    /// ns per unobserved set (`nsPerUnit`) ÷ that; the peer's no-observer setter (one object,
    /// as in setter-no-observers), and `nsPerUnit` ÷ that.
    var noObserverNsPerUnit: Stats?
    var sparseRatio: Double?
    var setterNsPerUnit: Stats?
    var setterRatio: Double?
    /// Memory: bytes per observation, one key / one object each.
    var bytesPerObservationOneKey: Double?
    var bytesPerObservationPerObject: Double?
    /// Peer time ÷ reference time (nil for the reference itself or when either is missing).
    var speedup: Double?
}

struct WorkloadResult: Codable, Sendable {
    var name: String
    var kind: WorkloadKind
    var size: Int
    var title: String
    var unit: String
    var threads: Int?
    var results: [PeerResult]
}

/// A result that only one peer has (e.g. the C API's has_observers).
struct ExtraResult: Codable, Sendable {
    var name: String
    var peer: String
    var value: Double
    var unit: String
    var note: String
}

extension Int {
    /// 100000 → "100,000".
    var formatted3: String {
        let digits = String(self.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (self < 0 ? "-" : "") + out
    }
}

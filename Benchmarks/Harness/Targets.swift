// Targets.swift — the performance targets (SPEC.md §5), checked against this run's results.
//
// Every target is a ratio between two rows measured in the same run, or a byte count, so the
// table means the same thing on any machine. A target whose rows were not measured (filtered
// out, or a peer without that workload) is listed as "not measured", never as met.

/// One target and what this run measured for it.
struct TargetCheck {
    enum Bound {
        case atMost(Double)
        case atLeast(Double)

        var text: String {
            switch self {
            case .atMost(let limit): return "≤ \(format(limit))"
            case .atLeast(let limit): return "≥ \(format(limit))"
            }
        }

        func holds(_ value: Double) -> Bool {
            switch self {
            case .atMost(let limit): return value <= limit
            case .atLeast(let limit): return value >= limit
            }
        }
    }

    var target: String
    var bound: Bound
    var unit: String
    /// nil when a row the target needs is missing from the run.
    var measured: Double?
    /// What was divided by what, or why the value is missing.
    var detail: String

    var verdict: String {
        guard let measured, !measured.isNaN else { return "not measured" }
        return bound.holds(measured) ? "met" : "**not met**"
    }
}

/// Computes the target table from one run's workloads.
struct Targets {
    var workloads: [WorkloadResult]

    /// Peers a Swift user would pick instead of SwiftKVO's token style (floors excluded).
    static let swiftPeers = [
        "opencombine-subject", "opencombine-published", "observation", "notificationcenter", "kvocontroller-port",
    ]

    /// The SwiftKVO rows and the peer row each must not trail, on every workload.
    static let counterparts: [(peer: String, label: String, against: [String])] = [
        ("swiftkvo-token", "token style", swiftPeers),
        ("swiftkvo-hub", "NotificationHub", ["notificationcenter"]),
        ("swiftkvo-hub-token", "NotificationHub (token)", ["notificationcenter"]),
        ("swiftkvo-kvocontroller", "KVOController", ["kvocontroller-port"]),
    ]

    func checks() -> [TargetCheck] {
        var out: [TargetCheck] = []
        out += memoryChecks()
        out += dispatchChecks()
        out += sparseContentionAndChurnChecks()
        out += aheadOfEveryPeerChecks()
        return out
    }

    func render() -> String {
        let rows = checks()
        if rows.isEmpty { return "" }
        var out = "\n## Targets (SPEC.md §5): ratios within this run\n\n"
        out += "| target | bound | measured | verdict | from |\n|---|---:|---:|---|---|\n"
        for row in rows {
            let value = row.measured.map { "\(format($0))\(row.unit)" } ?? "—"
            out += "| \(row.target) | \(row.bound.text)\(row.unit) | \(value) | \(row.verdict) | \(row.detail) |\n"
        }
        let missed = rows.filter { $0.verdict == "**not met**" }.count
        let unmeasured = rows.filter { $0.measured == nil }.count
        out += "\n\(rows.count - missed - unmeasured) of \(rows.count) targets met, \(missed) not met"
            + (unmeasured > 0 ? ", \(unmeasured) not measured in this run" : "") + ".\n"
        return out
    }

    // MARK: - Lookups

    private func workload(_ kind: WorkloadKind, size: Int? = nil) -> WorkloadResult? {
        workloads.first { $0.kind == kind && (size == nil || $0.size == size) }
    }

    private func row(_ w: WorkloadResult?, _ peer: String) -> PeerResult? {
        w?.results.first { $0.peer == peer }
    }

    private func median(_ w: WorkloadResult?, _ peer: String) -> Double? {
        row(w, peer)?.nsPerUnit?.median
    }

    private func ratio(_ numerator: Double?, _ denominator: Double?) -> Double? {
        guard let numerator, let denominator, denominator > 0 else { return nil }
        return numerator / denominator
    }

    private func describe(_ numerator: Double?, _ denominator: Double?, _ what: String) -> String {
        guard let numerator, let denominator else { return "\(what): a row is missing" }
        return "\(what): \(format(numerator)) ÷ \(format(denominator))"
    }

    /// A target on the ratio of two peers' median times in one workload.
    private func timeRatio(
        _ target: String, _ bound: TargetCheck.Bound, in w: WorkloadResult?, _ numerator: String,
        over denominator: String
    ) -> TargetCheck {
        let n = median(w, numerator)
        let d = median(w, denominator)
        return TargetCheck(
            target: target, bound: bound, unit: "×", measured: ratio(n, d),
            detail: describe(n, d, "ns, \(w?.name ?? "workload not run")"))
    }

    // MARK: - Targets

    private func memoryChecks() -> [TargetCheck] {
        let memory = workload(.memory)
        func bytes(_ peer: String) -> Double? { row(memory, peer)?.bytesPerObservationOneKey }
        var out: [TargetCheck] = []
        for (peer, label, limit) in [("swiftkvo-c", "C API", 128.0), ("swiftkvo-token", "token style", 256.0)] {
            out.append(TargetCheck(
                target: "memory per observation, \(label)", bound: .atMost(limit), unit: " B",
                measured: bytes(peer), detail: "memory, one key"))
        }
        for (peer, label, against, peerLabel) in [
            ("swiftkvo-hub", "NotificationHub", "notificationcenter", "NotificationCenter"),
            ("swiftkvo-hub-token", "NotificationHub (token)", "notificationcenter", "NotificationCenter"),
            ("swiftkvo-kvocontroller", "KVOController", "kvocontroller-port", "the port"),
        ] {
            out.append(TargetCheck(
                target: "memory per observation, \(label) ÷ \(peerLabel)", bound: .atMost(1), unit: "×",
                measured: ratio(bytes(peer), bytes(against)),
                detail: describe(bytes(peer), bytes(against), "B, one key")))
        }
        return out
    }

    private func dispatchChecks() -> [TargetCheck] {
        var out = [
            timeRatio(
                "C API, 1 observer ÷ C floor", .atMost(3), in: workload(.fanOut, size: 1), "swiftkvo-c", over: "c-floor")
        ]
        for n in [10, 100, 1000] {
            let w = workload(.fanOut, size: n)
            out.append(timeRatio(
                "C API ÷ C floor per callback, \(n) observers", .atMost(1.3), in: w, "swiftkvo-c", over: "c-floor"))
            out.append(timeRatio(
                "token ÷ C API per callback, \(n) observers", .atMost(2.5), in: w, "swiftkvo-token", over: "swiftkvo-c"))
        }
        let many = workload(.manySubjects)
        out.append(timeRatio("many subjects: C API ÷ C floor", .atMost(3), in: many, "swiftkvo-c", over: "c-floor"))
        out.append(timeRatio(
            "many subjects: token ÷ C-to-Swift floor", .atMost(2), in: many, "swiftkvo-token", over: "c-to-swift"))
        return out
    }

    private func sparseContentionAndChurnChecks() -> [TargetCheck] {
        var out: [TargetCheck] = []
        let sparse = row(workload(.sparse), "swiftkvo-token")
        out.append(TargetCheck(
            target: "sparse: set of an unobserved `@Observed` object ÷ the same set, class unobserved",
            bound: .atMost(1.5), unit: "×", measured: sparse?.sparseRatio,
            detail: describe(sparse?.nsPerUnit?.median, sparse?.noObserverNsPerUnit?.median, "ns, token style")))

        let contention = workload(.contention)
        let floorScaling = row(contention, "c-floor")?.scalingRatio
        let tokenScaling = row(contention, "swiftkvo-token")?.scalingRatio
        out.append(TargetCheck(
            target: "contention, one object: token's scaling − C floor's", bound: .atLeast(0), unit: "",
            measured: tokenScaling.flatMap { t in floorScaling.map { t - $0 } },
            detail: "scaling (N threads ÷ 1): token \(tokenScaling.map(format) ?? "—"), "
                + "C floor \(floorScaling.map(format) ?? "—")"))
        for (w, label) in [(contention, "one object"), (workload(.contentionReadingSender), "reading the sender")] {
            let centerScaling = row(w, "notificationcenter")?.scalingRatio
            for (peer, hubLabel) in [("swiftkvo-hub", "NotificationHub"), ("swiftkvo-hub-token", "NotificationHub (token)")] {
                let hubScaling = row(w, peer)?.scalingRatio
                out.append(TargetCheck(
                    target: "contention, \(label): \(hubLabel)'s scaling − NotificationCenter's",
                    bound: .atLeast(0), unit: "",
                    measured: hubScaling.flatMap { h in centerScaling.map { h - $0 } },
                    detail: "scaling: hub \(hubScaling.map(format) ?? "—"), "
                        + "NotificationCenter \(centerScaling.map(format) ?? "—")"))
            }
        }
        let own = workload(.contentionOwnObjects)
        for (peer, label) in [("swiftkvo-c", "C API"), ("swiftkvo-token", "token style")] {
            out.append(TargetCheck(
                target: "contention, own objects: \(label) scaling", bound: .atLeast(1.6), unit: "×",
                measured: row(own, peer)?.scalingRatio, detail: "N threads ÷ 1 thread"))
        }

        let churn = workload(.churn)
        out.append(timeRatio(
            "churn: token pair ÷ C API pair", .atMost(1.5), in: churn, "swiftkvo-token", over: "swiftkvo-c"))
        out.append(timeRatio(
            "churn: KVOController ÷ the port", .atMost(0.8), in: churn, "swiftkvo-kvocontroller", over: "kvocontroller-port"))
        out.append(timeRatio(
            "churn: observe by name ÷ by key path", .atMost(1.25), in: churn, "swiftkvo-by-name", over: "swiftkvo-token"))
        for n in [1, 10] {
            out.append(timeRatio(
                "dispatch by name ÷ by key path, \(n) observers", .atMost(1.1), in: workload(.fanOut, size: n),
                "swiftkvo-by-name", over: "swiftkvo-token"))
        }
        return out
    }

    /// Each SwiftKVO style against its counterpart on every workload both measured: time per unit
    /// (or bytes for memory), SwiftKVO ÷ the best counterpart, at most 1.
    private func aheadOfEveryPeerChecks() -> [TargetCheck] {
        var out: [TargetCheck] = []
        for (peer, label, against) in Self.counterparts {
            for w in workloads {
                func value(_ r: PeerResult?) -> Double? {
                    w.kind == .memory ? r?.bytesPerObservationOneKey : r?.nsPerUnit?.median
                }
                guard let ours = value(row(w, peer)) else { continue }
                let theirs = against.compactMap { id in value(row(w, id)).map { (id, $0) } }
                guard let best = theirs.min(by: { $0.1 < $1.1 }) else { continue }
                out.append(TargetCheck(
                    target: "\(w.name): \(label) ÷ best of \(against.count == 1 ? best.0 : "Swift peers")",
                    bound: .atMost(1), unit: "×", measured: ours / best.1,
                    detail: "\(format(ours)) ÷ \(format(best.1)) (\(best.0))"))
            }
        }
        return out
    }
}

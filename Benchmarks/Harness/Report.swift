// Report.swift — the tables printed on stdout (Markdown).

struct Report {
    var workloads: [WorkloadResult]
    var extras: [ExtraResult]
    var reference: String
    var header: [String]

    func render() -> String {
        var out = header.joined(separator: "\n") + "\n"
        out += Targets(workloads: workloads).render()
        for workload in workloads {
            out += "\n## \(workload.title)\n\n"
            switch workload.kind {
            case .memory: out += memoryTable(workload)
            case .contention, .contentionOwnObjects, .contentionReadingSender: out += contentionTable(workload)
            case .sparse: out += sparseTable(workload)
            default: out += timingTable(workload)
            }
        }
        out += summaryTable()
        if !extras.isEmpty {
            out += "\n## SwiftKVO C API only\n\n| measurement | value | notes |\n|---|---:|---|\n"
            for extra in extras {
                out += "| \(extra.name) | \(format(extra.value)) \(extra.unit) | \(extra.note) |\n"
            }
        }
        return out
    }

    private var speedupHeader: String { "× \(reference) (peer ÷ ref)" }

    private func speedupCell(_ r: PeerResult, hasValue: Bool) -> String {
        if !hasValue { return "—" }
        if r.peer == reference { return "1 (ref)" }
        return r.speedup.map { "\(format($0))×" } ?? "—"
    }

    private func warning(_ r: PeerResult) -> String {
        if let d = r.callbackDiscrepancy, d != 0 { return " ⚠ callbacks off by \(d)" }
        return ""
    }

    private func timingTable(_ w: WorkloadResult) -> String {
        let perSecond = w.unit == "callback" ? "callbacks/s" : "\(w.unit)s/s"
        var out = "| peer | ns/\(w.unit) (median) | min–max | \(perSecond) | \(speedupHeader) |\n"
        out += "|---|---:|---:|---:|---:|\n"
        for r in w.results {
            guard let s = r.nsPerUnit else {
                out += "| \(r.title) | — | — | — | — |\n"
                continue
            }
            out += "| \(r.title)\(warning(r)) | \(format(s.median)) | \(format(s.min))–\(format(s.max)) "
                + "| \(Int((1e9 / s.median).rounded()).formatted3) | \(speedupCell(r, hasValue: true)) |\n"
        }
        return out
    }

    private func contentionTable(_ w: WorkloadResult) -> String {
        let n = w.threads ?? 2
        var out = "| peer | 1 thread, ns/callback | \(n) threads, ns/callback (wall ÷ all callbacks) "
            + "| min–max | callbacks/s, \(n) threads | \(n) threads ÷ 1 thread | \(speedupHeader) |\n"
        out += "|---|---:|---:|---:|---:|---:|---:|\n"
        for r in w.results {
            guard let s = r.nsPerUnit, let single = r.singleThreadNsPerUnit else {
                out += "| \(r.title) | — | — | — | — | — | — |\n"
                continue
            }
            out += "| \(r.title)\(warning(r)) | \(format(single.median)) | \(format(s.median)) "
                + "| \(format(s.min))–\(format(s.max)) | \(Int((1e9 / s.median).rounded()).formatted3) "
                + "| \(r.scalingRatio.map { format($0) } ?? "—") | \(speedupCell(r, hasValue: true)) |\n"
        }
        out += "\nIdeal ratio: \(n) (or the core count, if lower). Throughput counts callbacks delivered "
            + "by all threads together.\n"
        return out
    }

    private func sparseTable(_ w: WorkloadResult) -> String {
        var out = "| peer | no-observer setter, one object, ns/set | none observed, ns/set "
            + "| 1 in 100 observed: ns per set of an unobserved object | min–max "
            + "| ÷ none observed | ÷ no-observer setter | \(speedupHeader) |\n"
        out += "|---|---:|---:|---:|---:|---:|---:|---:|\n"
        for r in w.results {
            guard let s = r.nsPerUnit, let none = r.noObserverNsPerUnit else {
                out += "| \(r.title) | — | — | — | — | — | — | — |\n"
                continue
            }
            let setter = r.setterNsPerUnit.map { format($0.median) } ?? "—"
            out += "| \(r.title) | \(setter) | \(format(none.median)) | \(format(s.median)) "
                + "| \(format(s.min))–\(format(s.max)) | \(r.sparseRatio.map { format($0) } ?? "—") "
                + "| \(r.setterRatio.map { format($0) } ?? "—") | \(speedupCell(r, hasValue: true)) |\n"
        }
        out += "\n\"None observed\" sets the same unobserved objects round-robin in a class nobody observes: "
            + "÷ none observed is what observing 1 in 100 objects costs the others. ÷ no-observer setter "
            + "compares with the peer's setter-no-observers fixture (one object, measured before the "
            + "sparse fixtures exist), and also counts the cache misses of touching 10,000 objects. SwiftKVO's target for `@Observed`: at most 1.5×.\n"
        return out
    }

    private func memoryTable(_ w: WorkloadResult) -> String {
        var out = "| peer | bytes/observation, all on one key | bytes/observation, one per object "
            + "| \(speedupHeader), one key |\n|---|---:|---:|---:|\n"
        for r in w.results {
            guard let oneKey = r.bytesPerObservationOneKey else {
                out += "| \(r.title) | — | — | — |\n"
                continue
            }
            let perObject = r.bytesPerObservationPerObject.map { format($0) } ?? "—"
            out += "| \(r.title) | \(format(oneKey)) | \(perObject) | \(speedupCell(r, hasValue: true)) |\n"
        }
        out += "\nMeasured with glibc mallinfo2(): (uordblks + hblkhd) after registering minus before, "
            + "÷ observations. Observer and observed objects are created before the measurement; tokens "
            + "and cancellables are stored in arrays reserved beforehand. Deferred frees and allocator "
            + "slack count; memory outside malloc (mmap by hand, thread stacks) does not.\n"
        return out
    }

    /// Fan-out and many-subjects side by side, as ns per callback.
    private func summaryTable() -> String {
        let columns = workloads.filter { $0.kind == .fanOut || $0.kind == .manySubjects }
        if columns.isEmpty { return "" }
        var peers: [(id: String, title: String)] = []
        for w in columns {
            for r in w.results where !peers.contains(where: { $0.id == r.peer }) {
                peers.append((r.peer, r.title))
            }
        }
        var out = "\n## Summary: ns per delivered callback (median)\n\n| peer |"
        for w in columns { out += w.kind == .fanOut ? " N=\(w.size) |" : " 10k subjects |" }
        out += "\n|---|" + String(repeating: "---:|", count: columns.count) + "\n"
        for peer in peers {
            out += "| \(peer.title) |"
            for w in columns {
                let cell = w.results.first { $0.peer == peer.id }?.nsPerUnit.map { format($0.median) } ?? "—"
                out += " \(cell) |"
            }
            out += "\n"
        }
        return out
    }
}

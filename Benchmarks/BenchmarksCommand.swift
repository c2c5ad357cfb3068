// BenchmarksCommand.swift — `swift run -c release Benchmarks [options]`.
//
// Measures SwiftKVO and its peers on the same workloads (SPEC.md §5): tables
// on stdout, progress on stderr, and a JSON file and an SVG chart in the
// output folder.

import ArgumentParser
import CKVOCore
import Foundation

@main
struct BenchmarksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Benchmarks",
        abstract: "Measure SwiftKVO against its peers: ns per delivered callback, speedups, scaling, memory.",
        discussion: """
            Each benchmark is named WORKLOAD/PEER, e.g. fan-out/100/opencombine-subject; \
            --filter keeps those whose name contains one of the given strings (case-insensitive; \
            "fan-out/1/" is N=1 alone, "fan-out/1" also matches 10, 100 and 1000). \
            The reference peer also runs wherever a selected workload runs, so speedups can be computed. \
            Use --list to print every name.
            """)

    @Option(name: .long, help: "Run only benchmarks whose WORKLOAD/PEER name contains this (repeatable).")
    var filter: [String] = []

    @Flag(name: .long, help: "CI smoke run: one short sample per benchmark, smaller memory and registration counts.")
    var quick = false

    @Option(name: .long, help: "Samples per benchmark (median and min–max are reported). Default 5; 1 with --quick.")
    var samples: Int?

    @Option(name: .long, help: "Minimum seconds per sample. Default 0.2; 0.01 with --quick.")
    var sampleTime: Double?

    @Option(name: .long, help: "Threads for the contention workload.")
    var threads = 2

    @Option(name: .long, help: "Peer that speedups (peer time ÷ reference time) are computed against.")
    var reference = PeerRegistry.defaultReference

    @Option(name: .long, help: "Folder for results.json, chart.svg and results.md.")
    var output = ".build/benchmarks"

    @Flag(name: .long, help: "List peers and benchmark names, then exit.")
    var list = false

    func validate() throws {
        if threads < 1 { throw ValidationError("--threads must be at least 1") }
        if let samples, samples < 1 { throw ValidationError("--samples must be at least 1") }
        if let sampleTime, !(sampleTime > 0) { throw ValidationError("--sample-time must be positive") }
        if !PeerRegistry.all.contains(where: { $0.id == reference }) {
            let ids = PeerRegistry.all.map(\.id).joined(separator: ", ")
            throw ValidationError("unknown --reference '\(reference)'; peers: \(ids)")
        }
    }

    func run() throws {
        if list {
            print("peers:")
            for peer in PeerRegistry.all { print("  \(peer.id)\t\(peer.title)") }
            print("workloads:")
            for spec in WorkloadSpec.plan(quick: quick, threads: threads) { print("  \(spec.name)") }
            let count = quick ? 100_000 : 1_000_000
            print("  extras/has-observers (swiftkvo-c only)\n  extras/register-\(count) (swiftkvo-c only)")
            return
        }

        let plan = SamplingPlan(
            samples: samples ?? (quick ? 1 : 5),
            minSampleSeconds: sampleTime ?? (quick ? 0.01 : 0.2),
            warmUpSeconds: quick ? 0.002 : 0.1)

        #if DEBUG
        let build = "debug"
        let banner: String? = """
            !!!! DEBUG BUILD: these numbers are meaningless. !!!!
            !!!! Run: swift run -c release Benchmarks        !!!!
            """
        #else
        let build = "release"
        let banner: String? = nil
        #endif

        let started = Date()
        let header = headerLines(build: build, plan: plan, started: started, banner: banner)
        for line in header { progress(line) }

        let runner = Runner(
            peers: PeerRegistry.all, reference: reference, plan: plan, threads: threads, quick: quick,
            filters: filter)
        let (workloads, extras) = runner.run()

        let report = Report(workloads: workloads, extras: extras, reference: reference, header: header)
        let text = report.render() + "\nLoad average at the end: \(loadAverage()) (2 cores: above ~0.5 other work was running).\n"
        print(text, terminator: "")

        // Files.
        let folder = URL(fileURLWithPath: output, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let document = ResultsDocument(
            build: build, date: ISO8601DateFormatter().string(from: started), quick: quick,
            samples: plan.samples, minSampleSeconds: plan.minSampleSeconds, threads: threads,
            reference: reference, memoryMethod: "mallinfo2: uordblks + hblkhd, delta / observations",
            ckvoVersion: String(cString: ckvo_version_string()), filters: filter,
            workloads: workloads, extras: extras)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(document).write(to: folder.appendingPathComponent("results.json"))
        let chart = Chart(
            workloads: workloads, reference: reference,
            subtitle: "\(build) build\(quick ? " (quick)" : "") · \(plan.samples) sample\(plan.samples == 1 ? "" : "s") "
                + "≥ \(plan.minSampleSeconds) s · "
                + "\(ProcessInfo.processInfo.activeProcessorCount) CPUs · "
                + ISO8601DateFormatter().string(from: started) + " · load average at the end \(loadAverage())")
        try chart.render().write(
            to: folder.appendingPathComponent("chart.svg"), atomically: true, encoding: .utf8)
        try text.write(to: folder.appendingPathComponent("results.md"), atomically: true, encoding: .utf8)
        progress("wrote \(folder.path)/results.json, chart.svg, results.md")
        if let banner { progress(banner) }
    }

    private func headerLines(build: String, plan: SamplingPlan, started: Date, banner: String?) -> [String] {
        var lines: [String] = []
        if let banner { lines.append(banner) }
        lines.append("# SwiftKVO benchmarks")
        lines.append("")
        lines.append(
            "\(build) build · ckvo \(String(cString: ckvo_version_string())) · "
                + "\(ProcessInfo.processInfo.activeProcessorCount) CPUs · "
                + "\(ISO8601DateFormatter().string(from: started)) · load average at the start: \(loadAverage())")
        lines.append(
            "Method: warm-up, then \(plan.samples) sample\(plan.samples == 1 ? "" : "s") of ≥ "
                + "\(plan.minSampleSeconds) s each; median and min–max of ns per unit. Every callback does "
                + "the same work (a per-thread C counter increment, checked against the expected count). "
                + "Speedup = peer time ÷ \(reference) time (> 1: the reference is faster)."
                + (quick ? " QUICK MODE: smoke run, numbers are rough." : ""))
        return lines
    }
}

/// /proc/loadavg's three averages, or "unknown".
func loadAverage() -> String {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

/// The JSON file's top level.
struct ResultsDocument: Codable {
    var build: String
    var date: String
    var quick: Bool
    var samples: Int
    var minSampleSeconds: Double
    var threads: Int
    var reference: String
    var memoryMethod: String
    var ckvoVersion: String
    var filters: [String]
    var workloads: [WorkloadResult]
    var extras: [ExtraResult]
}

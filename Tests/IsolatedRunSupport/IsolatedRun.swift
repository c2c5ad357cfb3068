// Running one test in a process of its own, for measurements that belong to the whole process
// (the resident set): Swift Testing runs every suite in parallel in one process, so a test that
// measures RSS starts its test executable again, filtered to itself, with SWIFTKVO_ISOLATED_TEST
// naming it, and the child does the measuring.

import Foundation
import Testing

/// Whether this process is the child ``runIsolated(filter:name:seconds:)`` started for the test
/// named `name`.
public func isIsolatedChild(_ name: String) -> Bool {
    ProcessInfo.processInfo.environment["SWIFTKVO_ISOLATED_TEST"] == name
}

/// Runs this test executable again, with only the tests matching `filter`, and
/// SWIFTKVO_ISOLATED_TEST=`name` plus `environment` in its environment. Returns its exit status
/// and output. A child still running after `seconds` is terminated (a hang guard, not a
/// measurement).
public func runIsolated(
    filter: String, name: String, seconds: Double = 900, environment: [String: String] = [:]
) async throws -> (status: Int32, output: String) {
    // Waits on a thread of its own: blocking a Swift concurrency thread for the child's whole run
    // would keep other tests from running meanwhile.
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(
                with: Result {
                    try runChild(filter: filter, name: name, seconds: seconds, environment: environment)
                })
        }.start()
    }
}

/// The parent's side of a measuring test: runs it in a child (``runIsolated(filter:name:seconds:)``),
/// expects the child to pass and to have printed a line containing `marker`, and echoes those
/// lines (the measurements) to this process's output.
public func measureInChild(
    filter: String, name: String, marker: String = "memory-bound:",
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let child = try await runIsolated(filter: filter, name: name)
    #expect(child.status == 0, "the isolated run failed:\n\(child.output)", sourceLocation: sourceLocation)
    for line in child.output.split(separator: "\n") where line.contains(marker) {
        print(line)
    }
    #expect(
        child.output.contains(marker), "the isolated run did not measure:\n\(child.output)",
        sourceLocation: sourceLocation)
}

private func runChild(
    filter: String, name: String, seconds: Double, environment extra: [String: String]
) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(
        fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    process.arguments = ["--testing-library", "swift-testing", "--filter", filter]
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFTKVO_ISOLATED_TEST"] = name
    environment.merge(extra) { _, new in new }
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    watchdog.cancel()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

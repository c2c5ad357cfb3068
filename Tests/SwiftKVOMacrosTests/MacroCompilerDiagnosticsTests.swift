#if Macros
import Foundation
import Testing

// The compiler's own view of the macro: sources compiled by `swiftc` against this build's
// SwiftKVOMacros module and macro plugin, for what a class in the test target cannot show — an
// error's count and place, the absence of errors in generated code, and warnings (compiled with
// `-warnings-as-errors`).

/// The build folder of this test binary (its `Modules` folder and the plugin are there).
private let buildFolder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()

/// The diagnostics `swiftc -typecheck` gives `source`, one `line:column: severity: message` each,
/// in the order given.
private func diagnostics(compiling source: String, flags: [String] = []) throws -> [String] {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kvo-macro-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("main.swift")
    try source.write(to: file, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments =
        [
            "swiftc", "-typecheck", "-swift-version", "6", "-module-name", "Probe",
            "-I", buildFolder.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + buildFolder.appendingPathComponent("CKVOCore.build/module.modulemap").path,
            "-load-plugin-executable",
            buildFolder.appendingPathComponent("SwiftKVOMacrosPlugin-tool").path + "#SwiftKVOMacrosPlugin",
            "-module-cache-path", folder.appendingPathComponent("cache").path,
        ] + flags + [file.path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    // The first line of each diagnostic: `main.swift:3:5: error: …`, or one in generated code
    // (`macro expansion @…:1:5: error: …`, `<unknown>:0: error: …`).
    return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
        let start = #"^(\S*main\.swift|macro expansion \S+|<unknown>):"#
        guard let range = line.range(of: start, options: .regularExpression),
            line.contains(": error: ") || line.contains(": warning: ")
        else { return nil }
        let place = line[range].hasSuffix("main.swift:") ? "" : String(line[range])
        return place
            + line[range.upperBound...].replacingOccurrences(of: " (from macro 'KeyValueObservable')", with: "")
    }
}

@Suite struct MacroCompilerDiagnosticsTests {
    @Test func refusalsAreTheMacrosOwnAtTheUsersLinesOnceEach() throws {
        let found = try diagnostics(
            compiling: """
                import SwiftKVOMacros

                @KeyValueObservable
                final class Pair {
                    var first = 0, second = 0
                }

                @KeyValueObservable
                class Account {
                    var name = ""
                }

                @KeyValueObservable
                final class Savings: Account {
                    var rate = 0.0
                }

                func make() {
                    @KeyValueObservable
                    final class Local {
                        var count = 0
                    }
                    _ = Local()
                }
                """)
        #expect(
            found == [
                "5:5: error: '@KeyValueObservable' observes one property per declaration; declare each 'var' on its own line, or mark this one '@KVOIgnored'",
                "13:1: error: 'Savings' inherits 'KeyValueObservable' from 'Account': remove '@KeyValueObservable'; a subclass inherits it, and declares its own properties with '@Observed', '@ObservedArray' or '@ObservedSet' and its keys by overriding 'observableKeyPaths'",
                "19:5: error: '@KeyValueObservable' cannot declare the local class 'Local' observable: its conformance is an extension, which a function cannot contain; declare 'Local' outside the function",
                // The compiler's own, for the extension role it cannot expand there.
                "20:17: error: local type cannot have attached extension macro",
            ])
    }

    @Test func acceptedShapesCompileWithoutAWarning() throws {
        let found = try diagnostics(
            compiling: """
                import Observation
                import SwiftKVOMacros

                @KeyValueObservable
                open class Shelf {
                    typealias Labels = Set<Int>
                    public var tags: Set<String> = []
                    var labels: Labels = []
                    @ObservedSet var alarms: Set<String> = []
                    var items: Array<Int> = []
                    #if DEBUG
                    var trace: [String] = []
                    @DependsOn(\\.trace) var lastTrace: String? { trace.last }
                    #else
                    var level = 0
                    #endif
                    @available(*, deprecated, message: "use tags")
                    var oldTags: Set<String> = []
                    @DependsOn(\\.oldTags) var oldCount: Int { 0 }
                    @DependsOn(\\.tags) var count: Int { tags.count }
                    public init() {}
                }

                @KeyValueObservable
                final class Bridged: SwiftKVO.ObservationBridged {
                    let observationRegistrar = ObservationRegistrar()
                    var name = ""
                }

                @KeyValueObservable
                final class Counter: Sendable {
                    nonisolated(unsafe) var hits = 0
                    let name = ""
                }

                final class Bin: Shelf {
                    @Observed var depth = 0
                    override class var observableKeyPaths: [String: AnyKeyPath] {
                        super.observableKeyPaths.merging(["depth": \\Bin.depth]) { _, new in new }
                    }
                }
                """,
            flags: ["-warnings-as-errors", "-D", "DEBUG"])
        #expect(found == [])
    }

    @Test func mainActorClassesAndPropertiesCompileWithoutAWarning() throws {
        let found = try diagnostics(
            compiling: """
                import SwiftKVOMacros

                @KeyValueObservable @MainActor
                final class Badge {
                    var count = 0
                    var tags: Set<String> = []
                    @DependsOn(\\.count) var label: String { "\\(count)" }
                    @available(*, deprecated, message: "use count")
                    var old = 0
                    @DependsOn(\\.old) var oldLabel: String { "" }
                }

                @KeyValueObservable @MainActor
                final class Gauge {
                    nonisolated let kvoRegistrar: KVORegistrar
                    var level = 0
                    init() { kvoRegistrar = KVORegistrar() }
                }

                @MainActor @KeyValueObservable
                class Screen {
                    var title = ""
                    nonisolated let kvoRegistrar = KVORegistrar()
                }

                @KeyValueObservable
                final class Session: @unchecked Sendable {
                    var user = ""
                    @MainActor var title = ""
                    @MainActor var items: [Int] = []
                    @available(*, deprecated, message: "use title")
                    @MainActor var caption = ""
                }

                @MainActor func use(_ badge: Badge, _ session: Session) throws {
                    _ = try badge.observe(\\.count) { _, _ in }
                    _ = try session.observe(\\.title) { _, _ in }
                }
                """,
            flags: ["-warnings-as-errors"])
        #expect(found == [])
    }

    @Test func aMainActorClassRegistrarThatIsNotNonisolatedIsReportedAtItsLine() throws {
        let found = try diagnostics(
            compiling: """
                import SwiftKVOMacros

                @KeyValueObservable @MainActor
                final class Badge {
                    let kvoRegistrar = KVORegistrar()
                    var count = 0
                }
                """)
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.hasPrefix("5:5: error: 'kvoRegistrar'") == true, "\(found)")
    }
}
#endif

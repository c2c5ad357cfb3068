// The gate in front of every layout read in this folder. On first use it runs the readers on key
// paths and classes of known shape compiled into this module and compares what they compute with
// what the declarations say. If any comparison fails (or SWIFTKVO_RUNTIME_SELF_CHECK=fail forces
// it), every reader answers "unknown" for the life of the process and the registry decides with
// declarations and public key path API alone, refusing what those cannot decide (never a guess).
// The check runs on registration paths only: getters, setters and dispatch never reach it.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The outcome of SwiftKVO's check of the runtime layouts it reads.
///
/// Resolving a key path reads layouts Swift does not promise on Linux (key
/// path component buffers, class metadata). Before the first such read,
/// SwiftKVO checks its readers against key paths and classes of known shape.
/// When that check fails, or when the environment variable
/// `SWIFTKVO_RUNTIME_SELF_CHECK` is `fail`, no layout is read for the life of
/// the process: key paths are decided from the classes' tables of observable
/// key paths and public key path API alone, and what those cannot decide is
/// refused with ``KVOError/unsupportedKeyPath`` naming the limit. The article
/// *Failures and refusals* lists what is refused then.
///
/// Reading ``current`` runs the check if it has not run yet (once per
/// process, thread-safe); it never blocks dispatch.
public struct LayoutSelfCheck: Sendable, CustomStringConvertible {
    /// Whether the layout readers may be used.
    public let passed: Bool
    /// Whether the check was forced to fail (`SWIFTKVO_RUNTIME_SELF_CHECK=fail`).
    public let isForced: Bool
    /// The checks that failed, each named (empty when ``passed``).
    public let failures: [String]

    /// This process's check, run on first use.
    public static var current: LayoutSelfCheck { RuntimeLayout.check }

    public var description: String {
        if passed { return "runtime layout self-check passed" }
        return RuntimeLayout.limit(of: self)
    }
}

/// The process-wide gate of the layout readers.
enum RuntimeLayout {
    /// The environment variable that forces the check to fail.
    static let forcingVariable = "SWIFTKVO_RUNTIME_SELF_CHECK"

    /// This process's check (a lazily initialized global: run once, thread-safe).
    static let check: LayoutSelfCheck = {
        if let value = getenv(forcingVariable), String(cString: value) == "fail" {
            return LayoutSelfCheck(passed: false, isForced: true, failures: ["forced by \(forcingVariable)=fail"])
        }
        return run(SelfCheckShapes.expected)
    }()

    /// Whether the readers may read layouts.
    @inline(__always)
    static var isTrusted: Bool { check.passed }

    /// What a refusal made in fallback mode says about its cause.
    static var limit: String { limit(of: check) }

    static func limit(of check: LayoutSelfCheck) -> String {
        "this toolchain's key path layout did not pass SwiftKVO's self-check ("
            + check.failures.joined(separator: "; ") + ")"
    }

    /// Runs the readers on `expectations`, ungated, and compares.
    static func run(_ expectations: [SelfCheckShapes.Expectation]) -> LayoutSelfCheck {
        let failures = expectations.compactMap { expectation in
            expectation.holds() ? nil : expectation.name
        }
        return LayoutSelfCheck(passed: failures.isEmpty, isForced: false, failures: failures)
    }
}

// EngineViolations.swift — what the C callbacks and releases found (violations.c), as failures.

import CSoakSupport

struct EngineViolations {
    private var reported = [UInt64](repeating: 0, count: Int(CSOAK_VIOLATION_COUNT.rawValue))

    /// Reports each kind of violation that occurred since the last call.
    mutating func report() {
        for index in reported.indices {
            let kind = csoak_violation_t(rawValue: UInt32(index))
            let count = csoak_violation_count(kind)
            guard count > reported[index] else { continue }
            verdict.fail(
                "C API: \(String(cString: csoak_violation_name(kind))) (\(count) times; first by observation "
                    + "\(csoak_violation_first_id(kind)))")
            reported[index] = count
        }
    }
}

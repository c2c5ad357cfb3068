// Swift handles on the C test-support probe and recorder.

import CKVOCore
import CKVOTestSupport

/// An observation context from CKVOTestSupport: counts calls and releases, records each call
/// into an optional `Recorder`, and runs Swift hooks from inside the callback.
final class Probe {
    let raw: OpaquePointer
    /// Runs inside the callback, after the call was counted and recorded.
    var onChange: ((UnsafePointer<ckvo_change_t>) -> Void)? { didSet { installHooks() } }
    /// Runs inside the release, after it was counted.
    var onRelease: (() -> Void)? { didSet { installHooks() } }

    init(_ recorder: Recorder? = nil, id: UInt64 = 0) {
        guard let raw = ckvots_probe_create(recorder?.raw, id) else { fatalError("out of memory") }
        self.raw = raw
    }

    deinit { ckvots_probe_destroy(raw) }

    var id: UInt64 { ckvots_probe_id(raw) }
    var context: UnsafeMutableRawPointer { UnsafeMutableRawPointer(raw) }
    var calls: UInt64 { ckvots_probe_calls(raw) }
    var releases: UInt64 { ckvots_probe_releases(raw) }
    var callsAfterRelease: UInt64 { ckvots_probe_calls_after_release(raw) }

    func clearHooks() {
        onChange = nil
        onRelease = nil
    }

    private func installHooks() {
        guard onChange != nil || onRelease != nil else {
            ckvots_probe_set_hooks(raw, nil, nil, nil)
            return
        }
        // Unretained: the probe outlives every hub that can call it (TestHub keeps it).
        ckvots_probe_set_hooks(
            raw,
            { change, user in
                Unmanaged<Probe>.fromOpaque(user!).takeUnretainedValue().onChange?(change!)
            },
            { user in Unmanaged<Probe>.fromOpaque(user!).takeUnretainedValue().onRelease?() },
            Unmanaged.passUnretained(self).toOpaque())
    }
}

/// One delivered change as a probe saw it.
struct Event: Equatable {
    var probe: UInt64
    var thread: UInt64
    var object: UnsafeRawPointer?
    var oldValue: UnsafeRawPointer?
    var newValue: UnsafeRawPointer?
    var key: ckvo_key_t
    var kind: ckvo_kind_t
    var isPrior: Bool
    var isInitial: Bool
    /// nil when the change carried a NULL `indexes` pointer.
    var indexes: [Int]?
}

/// The thread-safe log probes record into.
final class Recorder {
    let raw: OpaquePointer

    init() {
        guard let raw = ckvots_recorder_create() else { fatalError("out of memory") }
        self.raw = raw
    }

    deinit { ckvots_recorder_destroy(raw) }

    var count: Int { ckvots_recorder_count(raw) }

    var events: [Event] {
        (0..<count).map { i in
            var e = ckvots_event_t()
            _ = ckvots_recorder_event(raw, i, &e)
            var indexes: [Int]? = nil
            if e.indexes_present {
                var buffer = [Int](repeating: 0, count: 64)
                let n = ckvots_recorder_indexes(raw, i, &buffer, buffer.count)
                indexes = Array(buffer.prefix(n))
            }
            return Event(
                probe: e.probe_id, thread: e.thread, object: e.object, oldValue: e.old_value,
                newValue: e.new_value, key: e.key, kind: e.kind, isPrior: e.is_prior,
                isInitial: e.is_initial, indexes: indexes)
        }
    }

    /// The probe ids in delivery order.
    var order: [UInt64] { events.map(\.probe) }

    func clear() { ckvots_recorder_clear(raw) }
}

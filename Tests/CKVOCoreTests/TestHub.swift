// A hub owned by one test, and the small helpers every suite uses to talk to it.

import CKVOCore
import CKVOTestSupport
import Testing

/// A `ckvo_hub_t` created for one test. It keeps every `Probe` observed through it alive until
/// the C hub is destroyed, because the hub may still call a probe's release until then.
final class TestHub {
    let raw: OpaquePointer
    private var destroyed = false
    private var retained: [Probe] = []

    init() {
        guard let raw = ckvo_hub_create() else { fatalError("ckvo_hub_create returned NULL") }
        self.raw = raw
    }

    deinit {
        if !destroyed { _ = ckvo_hub_destroy(raw) }
        for probe in retained { probe.clearHooks() }
    }

    /// Destroys the C hub now (releasing every remaining context) and returns its status.
    @discardableResult
    func destroy() -> ckvo_status_t {
        precondition(!destroyed, "hub destroyed twice by a test")
        let status = ckvo_hub_destroy(raw)
        destroyed = status == CKVO_OK
        return status
    }

    /// Interns `name`; the test fails if the hub refuses it.
    func key(_ name: String, getter: ckvo_getter_t? = nil) -> ckvo_key_t {
        let key = ckvo_key_intern(raw, name, getter)
        #expect(key != 0, "ckvo_key_intern(\(name)) failed")
        return key
    }

    /// Registers `probe` (context and release come from it; the callback too unless another
    /// one that hands the probe to `ckvots_probe_callback` is given).
    @discardableResult
    func observe(
        _ probe: Probe, object: UnsafeRawPointer?, key: ckvo_key_t, options: ckvo_options_t = 0,
        owner: UnsafeRawPointer? = nil, callback: ckvo_callback_t = ckvots_probe_callback
    ) -> (status: ckvo_status_t, token: ckvo_token_t) {
        retained.append(probe)
        var token: ckvo_token_t = .none
        let status = ckvo_observe(
            raw, object, key, options, owner, callback, probe.context, ckvots_probe_release, &token)
        return (status, token)
    }

    /// Registers `probe` and fails the test unless that succeeds; returns the token.
    func mustObserve(
        _ probe: Probe, object: UnsafeRawPointer?, key: ckvo_key_t, options: ckvo_options_t = 0,
        owner: UnsafeRawPointer? = nil, callback: ckvo_callback_t = ckvots_probe_callback,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ckvo_token_t {
        let (status, token) = observe(
            probe, object: object, key: key, options: options, owner: owner, callback: callback)
        #expect(status == CKVO_OK, sourceLocation: sourceLocation)
        #expect(token != .none, sourceLocation: sourceLocation)
        return token
    }

    func unobserve(_ token: ckvo_token_t) -> ckvo_status_t { ckvo_unobserve(raw, token) }

    @discardableResult
    func did(
        _ object: UnsafeRawPointer?, _ key: ckvo_key_t, kind: ckvo_kind_t = CKVO_KIND_SETTING,
        old: UnsafeRawPointer? = nil, new: UnsafeRawPointer? = nil, indexes: [Int]? = nil
    ) -> ckvo_status_t {
        announce(ckvo_did_change, raw, object, key, kind: kind, old: old, new: new, indexes: indexes)
    }

    @discardableResult
    func will(
        _ object: UnsafeRawPointer?, _ key: ckvo_key_t, kind: ckvo_kind_t = CKVO_KIND_SETTING,
        old: UnsafeRawPointer? = nil, new: UnsafeRawPointer? = nil, indexes: [Int]? = nil
    ) -> ckvo_status_t {
        announce(ckvo_will_change, raw, object, key, kind: kind, old: old, new: new, indexes: indexes)
    }

    @discardableResult
    func flush() -> ckvo_status_t { ckvo_hub_flush(raw) }

    func stats() -> ckvo_hub_stats_t {
        var stats = ckvo_hub_stats_t()
        #expect(ckvo_hub_stats(raw, &stats) == CKVO_OK)
        return stats
    }

    func hasObservers(_ object: UnsafeRawPointer?, _ key: ckvo_key_t) -> Bool {
        ckvo_has_observers(raw, object, key)
    }
}

/// Announces a change through `function` (ckvo_will_change or ckvo_did_change) on any hub;
/// usable from inside callbacks, where only the raw hub pointer is at hand.
func announce(
    _ function: (OpaquePointer?, UnsafePointer<ckvo_change_t>?) -> ckvo_status_t,
    _ hub: OpaquePointer?, _ object: UnsafeRawPointer?, _ key: ckvo_key_t,
    kind: ckvo_kind_t = CKVO_KIND_SETTING, old: UnsafeRawPointer? = nil,
    new: UnsafeRawPointer? = nil, indexes: [Int]? = nil
) -> ckvo_status_t {
    var change = ckvo_change_t()
    change.object = object
    change.key = key
    change.kind = kind
    change.old_value = old
    change.new_value = new
    guard let indexes else { return function(hub, &change) }
    return indexes.withUnsafeBufferPointer { buffer in
        change.indexes = buffer.baseAddress
        change.index_count = buffer.count
        return function(hub, &change)
    }
}

/// A distinct, never-dereferenced address to use as an object, owner or value identity.
func fake(_ n: Int) -> UnsafeRawPointer { UnsafeRawPointer(bitPattern: 0x1000 + n * 16)! }

/// A token cell that keeps a stable address for C to write into and callbacks to read.
final class TokenCell {
    let pointer = UnsafeMutablePointer<ckvo_token_t>.allocate(capacity: 1)
    init() { pointer.initialize(to: .none) }
    deinit { pointer.deallocate() }
    var value: ckvo_token_t { pointer.pointee }
}

extension ckvo_status: @retroactive CustomStringConvertible {
    public var description: String { "\(rawValue) (\(String(cString: ckvo_strerror(rawValue))))" }
}

/// A mutable value shared between a test and the callbacks it installs (same thread, or
/// published to other threads by a join).
final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

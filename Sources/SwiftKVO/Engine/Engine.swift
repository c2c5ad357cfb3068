// The one place where SwiftKVO calls into CKVOCore: every `ckvo_*` call, status code and pointer
// handed to or received from C (as swift-system's Syscalls.swift).
//
// A registration's box: `Engine.observe` hands the engine the reference it is given, as the C
// context; `releaseTrampoline` balances it exactly once, after the observation is removed and a
// grace period has passed; if `ckvo_observe` fails the engine never calls release, and
// `Engine.observe` balances it. So the dispatch trampoline borrows the box at +0
// (`_withUnsafeGuaranteedRef`): no retain or release of it per delivery.

import CKVOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// See `Engine.fastHub`. Statically initialized (no lazy-init check).
@usableFromInline
@exclusivity(unchecked) nonisolated(unsafe) var _engineHubCache: OpaquePointer? = nil

/// An interned key of the engine (`ckvo_key_t`); 0 is never valid.
@usableFromInline
typealias EngineKey = UInt32

/// The probe of an engine key (`const ckvo_probe_t *`): its observation
/// counters, read with one relaxed load. Lives as long as the hub (the
/// process), so it is cached freely.
@usableFromInline
struct EngineProbe: @unchecked Sendable {  // immutable pointer into the immortal hub
    @usableFromInline
    let raw: UnsafePointer<ckvo_probe_t>

    init(raw: UnsafePointer<ckvo_probe_t>) { self.raw = raw }
}

/// An observation token of the engine (`ckvo_token_t`): a generation that
/// is never 0 in a valid token, and the record's index. Stored in 12 bytes
/// (an engine index is 32 bits); ``none`` names nothing.
@usableFromInline
struct EngineToken: Hashable, Sendable {
    let generation: UInt64
    let index: UInt32

    static let none = EngineToken(generation: 0, index: 0)

    init(generation: UInt64, index: UInt32) {
        self.generation = generation
        self.index = index
    }

    init(_ token: ckvo_token_t) {
        self.init(generation: token.generation, index: UInt32(truncatingIfNeeded: token.index))
    }

    var isNone: Bool { generation == 0 }

    /// The engine's form of the token.
    var engine: ckvo_token_t { ckvo_token_t(generation: generation, index: UInt64(index)) }
}

/// Where `ckvo_observe` writes a token (``EngineRegistrations``).
typealias EngineTokenSlot = UnsafeMutablePointer<ckvo_token_t>

/// The calls into CKVOCore. Internal; see the file comment.
@usableFromInline
enum Engine {
    /// The one process-wide hub every Swift observation lives in.
    @usableFromInline
    nonisolated(unsafe) static let hub: OpaquePointer = {
        guard let hub = ckvo_hub_default() else {
            fatalError("SwiftKVO: ckvo_hub_default() failed (out of memory)")
        }
        _engineHubCache = hub
        return hub
    }()

    /// The hub without the lazy-initialization check of `hub` (a `swift_once`
    /// per access): the statically initialized cache, published inside that
    /// one-time initialization. Every key is interned through `hub`, so any
    /// thread holding a resolved key has seen the cache written; a thread that
    /// has not sees `nil` and takes `hub`.
    @inlinable
    static var fastHub: OpaquePointer { _engineHubCache ?? hub }

    // MARK: Statuses

    /// The C status values, so that `KVOError` can name them without importing C.
    enum Status {
        static let invalidArgument = CKVO_EINVAL.rawValue
        static let notFound = CKVO_ENOENT.rawValue
        static let alreadyObserving = CKVO_EEXIST.rawValue
        static let outOfMemory = CKVO_ENOMEM.rawValue
        static let wouldDeadlock = CKVO_EDEADLK.rawValue
        static let nestingLimit = CKVO_ELOOP.rawValue
    }

    /// The engine's message for a status (`ckvo_strerror`).
    static func message(for status: Int32) -> String {
        String(cString: ckvo_strerror(status))
    }

    /// `nil` for `CKVO_OK`, the matching error otherwise.
    @usableFromInline @inline(__always)
    static func error(_ status: ckvo_status_t) -> KVOError? {
        status == CKVO_OK ? nil : KVOError(rawValue: status.rawValue)
    }

    /// The engine library's version string, e.g. "0.1.0".
    static var versionString: String { String(cString: ckvo_version_string()) }

    // MARK: Keys

    /// Interns `name` without a getter (initial values are read by the Swift
    /// trampoline). Returns 0 on failure.
    static func intern(_ name: String) -> EngineKey {
        auditWriterCall()
        return ckvo_key_intern(hub, name, nil)
    }

    /// The key interned from `prefix` followed by the UTF-8 bytes `name`, or
    /// 0 if none was: never interns, takes no lock (`ckvo_key_find`), and
    /// allocates nothing for names up to about a kilobyte (the bytes are put
    /// together on the stack). Uses `hub`, not `fastHub`: its caller holds no
    /// resolved key, so it may be the first call into the engine on any thread.
    static func findKey(_ prefix: StaticString, _ name: UnsafeBufferPointer<UInt8>) -> EngineKey {
        let count = prefix.utf8CodeUnitCount + name.count
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: count) { bytes in
            let raw = UnsafeMutableRawBufferPointer(bytes)
            raw.copyMemory(from: UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
            UnsafeMutableRawBufferPointer(rebasing: raw[prefix.utf8CodeUnitCount...])
                .copyMemory(from: UnsafeRawBufferPointer(name))
            return ckvo_key_find(hub, bytes.baseAddress, count)
        }
    }

    /// The name a key was interned from.
    static func name(of key: EngineKey) -> String? {
        ckvo_key_name(hub, key).map { String(cString: $0) }
    }

    /// Whether `token` still names a registered observation
    /// (`ckvo_token_is_live`): `false` once anything removed it, its object's
    /// death included. Lock-free.
    static func isLive(_ token: EngineToken) -> Bool {
        ckvo_token_is_live(fastHub, token.engine)
    }

    // MARK: Object identity

    /// An object's identity in the engine: its address.
    @inlinable @inline(__always)
    static func address(_ object: AnyObject) -> UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
    }

    @inlinable @inline(__always)
    static func address(of object: AnyObject) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
    }

    /// The byte offset of the stored property `keyPath` names in `object`, for
    /// property wrappers whose outlined slow paths reach their storage without
    /// a key path. Inlined, it folds to a constant-offset field address (no key
    /// path instance is created). Takes a modifying access: writers, and the
    /// key path probe one thread at a time (`Probe.record`).
    @inlinable @inline(__always)
    static func offset<Object: AnyObject, Field>(
        of keyPath: ReferenceWritableKeyPath<Object, Field>, in object: Object
    ) -> Int {
        let base = Int(bitPattern: address(of: object))
        return withUnsafeMutablePointer(to: &object[keyPath: keyPath]) {
            Int(bitPattern: $0) &- base
        }
    }

    // MARK: Registration

    /// Registers `box` for `key` of `object` (`nil`: every object) and
    /// returns its engine token. On success the engine owns the reference to
    /// `box` passed in, and `box.token` is set (already before an initial
    /// callback runs). The box must stay alive until this returns: a caller
    /// that hands over its only reference may do so only when nothing can
    /// remove the observation meanwhile (no owner, the object held by the
    /// caller, the token not known yet); afterwards it must not touch the box.
    ///
    /// Key 0 is what a failed ``intern(_:)`` returns, and interning fails
    /// only when the engine is out of memory (every name this layer builds
    /// fits): it throws ``KVOError/outOfMemory``.
    @usableFromInline
    static func observe(
        object: UnsafeRawPointer?, key: EngineKey, options: ObservingOptions,
        owner: UnsafeRawPointer?, box: consuming EngineObservation
    ) throws(KVOError) -> EngineToken {
        auditWriterCall()
        guard key != 0 else { throw .outOfMemory }
        // The reference moves into the engine's context (no count changes).
        let unmanaged = Unmanaged.passRetained(consume box)
        var token = ckvo_token_t()
        let status = withUnsafeMutablePointer(to: &token) { tokenSlot in
            unmanaged._withUnsafeGuaranteedRef { box in
                // Each box is a fresh object the engine keeps alive until it
                // releases it, so its address is in no other live observation.
                let register = {
                    ckvo_observe(
                        hub, object, key,
                        ckvo_options_t(options.rawValue) | CKVO_OPTION_UNIQUE_CONTEXT, owner,
                        dispatchTrampoline, unmanaged.toOpaque(), releaseTrampoline, tokenSlot)
                }
                guard box.keepsToken else { return register() }
                return EngineRegistrations.registering(box, tokenSlot: tokenSlot, register)
            }
        }
        if status == CKVO_OK {
            unmanaged._withUnsafeGuaranteedRef { $0.publish(EngineToken(token)) }
        }
        if let error = error(status) {
            // The engine never calls `release` after a failed observe.
            unmanaged.release()
            throw error
        }
        return EngineToken(token)
    }

    @discardableResult
    static func unobserve(_ token: EngineToken) -> KVOError? {
        auditWriterCall()
        return token.isNone ? .notFound : error(ckvo_unobserve(hub, token.engine))
    }

    @discardableResult
    static func unobserveAndWait(_ token: EngineToken) -> KVOError? {
        auditWriterCall()
        return token.isNone ? .notFound : error(ckvo_unobserve_sync(hub, token.engine))
    }

    /// Non-blocking removal, for the dispatch path (a callback that found its observer dead).
    @usableFromInline
    @discardableResult
    static func unobserveDeferred(_ token: EngineToken) -> KVOError? {
        token.isNone ? .notFound : error(ckvo_unobserve_deferred(hub, token.engine))
    }

    @discardableResult
    static func unobserveObject(address: UInt) -> KVOError? {
        auditWriterCall()
        guard let pointer = UnsafeRawPointer(bitPattern: address) else { return .invalidArgument }
        return error(ckvo_unobserve_object(hub, pointer))
    }

    /// Waits until every removed observation has been released (tests, shutdown).
    @discardableResult
    static func flush() -> KVOError? { error(ckvo_hub_flush(hub)) }

    /// Live observations and pending releases of the hub (tests, monitoring).
    static func stats() -> (observations: Int, keys: Int, pendingReleases: Int, bytes: Int) {
        var stats = ckvo_hub_stats_t()
        _ = ckvo_hub_stats(hub, &stats)
        return (Int(stats.observations), Int(stats.keys), Int(stats.pending_releases), Int(stats.bytes))
    }

    /// One live observation of an object, as the engine lists it.
    struct ListedObservation {
        let key: EngineKey
        let options: ObservingOptions
        /// Who registered it, told by its callback; `nil` for a callback
        /// this layer does not register with.
        let observer: ObservationSummary.Observer?
    }

    /// The live observations of the object at `address` (lock-free; see
    /// `ckvo_object_observations_visit`).
    static func observations(of address: UnsafeRawPointer) -> [ListedObservation] {
        var listed: [ListedObservation] = []
        // Room first: the visitor appends inside the engine's read section.
        listed.reserveCapacity(8)
        withUnsafeMutablePointer(to: &listed) { listed in
            _ = ckvo_object_observations_visit(hub, address, listingVisitor, listed)
        }
        return listed
    }

    /// The engine's name of `key` (for keys this layer did not name).
    static func keyName(_ key: EngineKey) -> String {
        ckvo_key_name(hub, key).map { String(cString: $0) } ?? "key \(key)"
    }

    /// Debug builds count writer calls made under a lock of this layer
    /// (`LockAudit`); release builds do nothing.
    @usableFromInline @inline(__always)
    static func auditWriterCall() {
        #if DEBUG
        LockAudit.checkNoLockHeld()
        #endif
    }

    // MARK: Dispatch

    /// The probe of `key` (its observation counters, living as long as the
    /// hub), for setters that check for observers inline. For an invalid key
    /// (0: a failed intern), a probe that always reads zero: such a key can
    /// have no observers.
    static func probe(of key: EngineKey) -> EngineProbe {
        ckvo_key_probe(hub, key).map(EngineProbe.init(raw:)) ?? unobservedProbe
    }

    /// Zero counters, never written.
    private static let unobservedProbe: EngineProbe = {
        let counters = UnsafeMutablePointer<ckvo_probe_t>.allocate(capacity: 1)
        counters.initialize(to: ckvo_probe_t())
        return EngineProbe(raw: UnsafePointer(counters))
    }()

    /// Whether a change of the probe's key, on any object, may reach an
    /// observer (may answer true spuriously, never false while an observation
    /// of the key exists). One relaxed load, no call.
    @inlinable @inline(__always)
    static func hasObservers(_ probe: EngineProbe) -> Bool {
        ckvo_probe_has_observers(probe.raw)
    }

    /// Whether the probe's key may have observers that want prior
    /// notifications: `ckvo_will_change` — a whole dispatch — is skipped when
    /// not. Never false while a `.prior` observation of the key exists.
    @inlinable @inline(__always)
    static func hasPriorObservers(_ probe: EngineProbe) -> Bool {
        ckvo_probe_has_prior_observers(probe.raw)
    }

    /// Whether a change of `key` on `object` may reach an observer (may answer
    /// true spuriously, never false while an observation exists).
    @inlinable @inline(__always)
    static func hasObservers(_ object: UnsafeRawPointer?, _ key: EngineKey) -> Bool {
        ckvo_has_observers(fastHub, object, key)
    }

    /// Announces a change (prior when `prior`, otherwise did-change) with
    /// borrowed pointers to local values. No heap allocation for a setting.
    /// Returns the engine's error (`nestingLimit` for runaway re-entrancy).
    @inlinable
    @discardableResult
    static func announce<Value>(
        prior: Bool, object: UnsafeRawPointer?, key: EngineKey, kind: ChangeKind,
        old: Value?, new: Value?, indexes: [Int]
    ) -> KVOError? {
        withOptionalPointer(to: old) { oldPointer in
            withOptionalPointer(to: new) { newPointer in
                announceRaw(
                    prior: prior, object: object, key: key, kind: kind,
                    old: oldPointer, new: newPointer, indexes: indexes)
            }
        }
    }

    /// A setting change with both values present: the setter fast path.
    @inlinable
    @discardableResult
    static func announceSetting<Value>(
        prior: Bool, object: UnsafeRawPointer, key: EngineKey, old: Value, new: Value?
    ) -> KVOError? {
        withUnsafePointer(to: old) { oldPointer in
            if let new {
                return withUnsafePointer(to: new) { newPointer in
                    announceRaw(
                        prior: prior, object: object, key: key, kind: .setting,
                        old: UnsafeRawPointer(oldPointer), new: UnsafeRawPointer(newPointer),
                        indexes: [])
                }
            }
            return announceRaw(
                prior: prior, object: object, key: key, kind: .setting,
                old: UnsafeRawPointer(oldPointer), new: nil, indexes: [])
        }
    }

    @inlinable @inline(__always)
    static func withOptionalPointer<Value, Result>(
        to value: Value?, _ body: (UnsafeRawPointer?) -> Result
    ) -> Result {
        if let value {
            return withUnsafePointer(to: value) { body(UnsafeRawPointer($0)) }
        }
        return body(nil)
    }

    @inlinable
    static func announceRaw(
        prior: Bool, object: UnsafeRawPointer?, key: EngineKey, kind: ChangeKind,
        old: UnsafeRawPointer?, new: UnsafeRawPointer?, indexes: [Int]
    ) -> KVOError? {
        let cKind = ckvo_kind_t(UInt32(kind.rawValue))
        if indexes.isEmpty {
            var change = ckvo_change_t(
                object: object, old_value: old, new_value: new, indexes: nil, index_count: 0,
                key: key, kind: cKind, is_prior: false, is_initial: false)
            let hub = fastHub
            return error(prior ? ckvo_will_change(hub, &change) : ckvo_did_change(hub, &change))
        }
        let hub = fastHub
        return indexes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: size_t.self) { sizes in
                var change = ckvo_change_t(
                    object: object, old_value: old, new_value: new, indexes: sizes.baseAddress,
                    index_count: sizes.count, key: key, kind: cKind, is_prior: false,
                    is_initial: false)
                return error(prior ? ckvo_will_change(hub, &change) : ckvo_did_change(hub, &change))
            }
        }
    }
}

// MARK: - Delivered changes

/// A borrowed view of the `ckvo_change_t` the engine delivers; valid only
/// during the callback. Its values are typed by the observation reading
/// them, as the value type its registration checked the key carries: a
/// property's declared type or a dependent key's (``KeyPathRegistry``), or a
/// chain's leaf type (``KeyPathChain``). A key's setters announce only values
/// of that type.
@usableFromInline
struct EngineChange {
    @usableFromInline
    let raw: UnsafePointer<ckvo_change_t>

    @inlinable @inline(__always)
    init(_ raw: UnsafePointer<ckvo_change_t>) { self.raw = raw }

    @inlinable
    var kind: ChangeKind {
        ChangeKind(rawValue: Int(raw.pointee.kind.rawValue)) ?? .setting
    }

    @inlinable
    var isPrior: Bool { raw.pointee.is_prior }

    /// `ObservedChange._bits`: kind (low 3 bits; the engine delivers only
    /// valid kinds, 1...4), prior (0x8), initial (0x10).
    @inlinable @inline(__always)
    var changeBits: UInt8 {
        UInt8(truncatingIfNeeded: raw.pointee.kind.rawValue) | (raw.pointee.is_prior ? 0x8 : 0)
            | (raw.pointee.is_initial ? 0x10 : 0)
    }

    /// Whether this is a change after registration that carries no indexes
    /// (a setting, or a collection change of no elements): the delivery fast
    /// path, whose values are exactly what the engine passed.
    @inlinable @inline(__always)
    var isPlain: Bool { raw.pointee.index_count == 0 && !raw.pointee.is_initial }

    @inlinable
    var isInitial: Bool { raw.pointee.is_initial }

    @inlinable
    var key: EngineKey { raw.pointee.key }

    /// The address of the changed object (`nil` for a keyed broadcast).
    @inlinable
    var objectAddress: UnsafeRawPointer? { raw.pointee.object }

    /// Copies the old value, typed as the announcer's `Value`.
    @inlinable @inline(__always)
    func oldValue<Value>(as _: Value.Type) -> Value? {
        guard let pointer = raw.pointee.old_value else { return nil }
        return pointer.assumingMemoryBound(to: Value.self).pointee
    }

    /// Copies the new value, typed as the announcer's `Value`.
    @inlinable @inline(__always)
    func newValue<Value>(as _: Value.Type) -> Value? {
        guard let pointer = raw.pointee.new_value else { return nil }
        return pointer.assumingMemoryBound(to: Value.self).pointee
    }

    /// Calls `body` with the new value when the announcer passed an object
    /// itself (`Unmanaged` opaque form) rather than a value's address. The
    /// announcer holds the object for the whole dispatch, so it is borrowed
    /// at +0.
    @inlinable @inline(__always)
    func withNewObject<Object: AnyObject>(as _: Object.Type, _ body: (Object) -> Void) {
        guard let address = raw.pointee.new_value else { return }
        Unmanaged<Object>.fromOpaque(address)._withUnsafeGuaranteedRef(body)
    }

    /// Copies the old value of a key-path chain's leaf: typed `Value`, or —
    /// for an optional chain (`\.account?.name`, `Value == Leaf?`) — the
    /// leaf's `Leaf` value wrapped in `Optional`.
    func oldValue<Value>(as _: Value.Type, wrappingLeaf: Bool) -> Value? {
        guard let pointer = raw.pointee.old_value else { return nil }
        return Self.read(pointer, as: Value.self, wrappingLeaf: wrappingLeaf)
    }

    /// The new-value counterpart of ``oldValue(as:wrappingLeaf:)``.
    func newValue<Value>(as _: Value.Type, wrappingLeaf: Bool) -> Value? {
        guard let pointer = raw.pointee.new_value else { return nil }
        return Self.read(pointer, as: Value.self, wrappingLeaf: wrappingLeaf)
    }

    private static func read<Value>(
        _ pointer: UnsafeRawPointer, as _: Value.Type, wrappingLeaf: Bool
    ) -> Value {
        if wrappingLeaf, let optional = Value.self as? any OptionalValue.Type {
            return optional.wrapping(pointer) as! Value
        }
        return pointer.assumingMemoryBound(to: Value.self).pointee
    }

    /// The indexes of a collection change; `nil` for a setting (no array is
    /// built). Allocates for a collection change.
    @inlinable @inline(__always)
    var indexes: [Int]? {
        let count = raw.pointee.index_count
        guard count > 0, let base = raw.pointee.indexes else { return nil }
        return Self.copyIndexes(base, count)
    }

    /// The allocating part of ``indexes``, kept out of line.
    @usableFromInline @inline(never)
    static func copyIndexes(_ base: UnsafePointer<Int>, _ count: Int) -> [Int] {
        Array(UnsafeBufferPointer(start: base, count: count))
    }

    /// Calls `body` with the changed object borrowed at +0. The announcer
    /// holds the object for the whole dispatch, so the borrow is safe.
    @inlinable @inline(__always)
    func withObject<Object: AnyObject, Result>(
        as _: Object.Type, _ body: (Object) -> Result
    ) -> Result? {
        guard let address = raw.pointee.object else { return nil }
        return Unmanaged<Object>.fromOpaque(address)._withUnsafeGuaranteedRef(body)
    }
}

/// `Optional`, opened: its wrapped type, and how to wrap a borrowed wrapped value.
protocol OptionalValue {
    static var wrappedType: Any.Type { get }
    static func wrapping(_ pointer: UnsafeRawPointer) -> Self
    /// The wrapped value, `nil` for `nil`.
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    static var wrappedType: Any.Type { Wrapped.self }
    var wrappedValue: Any? { self.map { $0 } }
    static func wrapping(_ pointer: UnsafeRawPointer) -> Optional {
        .some(pointer.assumingMemoryBound(to: Wrapped.self).pointee)
    }
}

// MARK: - Trampolines

/// The one C callback for every Swift observation: borrows the box at +0
/// (the engine keeps it alive until after a grace period) and calls its
/// delivery function, held in a `let`.
private let dispatchTrampoline: ckvo_callback_t = { change, context in
    // The engine never passes NULL for either.
    Unmanaged<EngineObservation>.fromOpaque(context.unsafelyUnwrapped)._withUnsafeGuaranteedRef { box in
        box.deliver(EngineChange(change.unsafelyUnwrapped), box)
    }
}

/// Files one listed observation into the array `arg` points to. Runs inside
/// the engine's read section, where the box is alive: it reads who
/// registered it from the box.
private let listingVisitor: ckvo_observation_visitor_t = { info, arg in
    guard let info, let arg else { return }
    let listed = arg.assumingMemoryBound(to: [Engine.ListedObservation].self)
    let isSwift =
        info.pointee.callback.map { unsafeBitCast($0, to: UnsafeRawPointer.self) }
        == unsafeBitCast(dispatchTrampoline, to: UnsafeRawPointer.self)
    let observer: ObservationSummary.Observer? =
        isSwift
        ? Unmanaged<EngineObservation>.fromOpaque(info.pointee.context.unsafelyUnwrapped)
            ._withUnsafeGuaranteedRef { $0.observerKind }
        : nil
    listed.pointee.append(
        Engine.ListedObservation(
            key: info.pointee.key,
            options: ObservingOptions(rawValue: info.pointee.options & ~CKVO_OPTION_UNIQUE_CONTEXT),
            observer: observer))
}

/// Balances the reference `Engine.observe` passed as context, exactly once.
private let releaseTrampoline: ckvo_release_t = { context in
    guard let context else { return }
    let box = Unmanaged<EngineObservation>.fromOpaque(context)
    box._withUnsafeGuaranteedRef { $0.engineReleased() }
    box.release()
}

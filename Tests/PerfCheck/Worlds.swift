// Worlds.swift — the observed objects the fixtures set up, through the C API
// and the Swift API.

import CKVOCore
import CPerfCheck
import SwiftKVO

/// The C API: a hub, a key, one heap Int whose address is the observed object,
/// and a setter that stores and announces with old and new values.
final class CWorld {
    let hub: OpaquePointer
    let key: ckvo_key_t
    let object = UnsafeMutablePointer<Int>.allocate(capacity: 1)

    init(observers: Int) {
        hub = ckvo_hub_create()!
        key = ckvo_key_intern(hub, "value", nil)
        precondition(key != 0, "ckvo_key_intern failed")
        object.initialize(to: 0)
        for i in 0..<observers { _ = observe(context: i + 1) }
    }

    /// One observation with its own context (the same context twice would be a duplicate).
    func observe(context: Int) -> ckvo_token_t {
        var token = ckvo_token_t()
        let status = ckvo_observe(
            hub, object, key, ckvo_options_t(CKVO_OPTION_NEW), nil, perfcheck_ckvo_callback,
            UnsafeMutableRawPointer(bitPattern: context), nil, &token)
        precondition(status == CKVO_OK, "ckvo_observe: \(String(cString: ckvo_strerror(status.rawValue)))")
        return token
    }

    func set(_ newValue: Int) {
        var old = object.pointee
        var new = newValue
        object.pointee = newValue
        withUnsafePointer(to: &old) { old in
            withUnsafePointer(to: &new) { new in
                var change = ckvo_change_t(
                    object: UnsafeRawPointer(object), old_value: old, new_value: new, indexes: nil,
                    index_count: 0, key: key, kind: CKVO_KIND_SETTING, is_prior: false, is_initial: false)
                _ = ckvo_did_change(hub, &change)
            }
        }
    }

    var setLoop: (Int) -> Void {
        { n in for i in 0..<n { self.set(i) } }
    }
}

/// The Swift API as its docs show it first.
final class Subject: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    @Observed var value = 0
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Subject.value] }
}

/// A loop that sets `objects`' values in turn, one object per operation.
/// The loop borrows each object (no reference count touched), so that one
/// operation counts the setter alone.
func roundRobinSetLoop<Object: SettableValue>(_ objects: [Object]) -> (Int) -> Void {
    precondition(objects.count == 64, "the loop picks objects by the index's low 6 bits")
    let borrowed = objects.map(Unmanaged.passUnretained)
    return { n in
        withExtendedLifetime(objects) {
            for i in 0..<n { borrowed[i & 63]._withUnsafeGuaranteedRef { $0.value = i } }
        }
    }
}

/// Reads `value` of 64 objects in turn, `n` times in all (the getter's cost;
/// the sum is kept, so no read is dropped).
func roundRobinGetLoop<Object: SettableValue>(_ objects: [Object]) -> (Int) -> Void {
    precondition(objects.count == 64, "the loop picks objects by the index's low 6 bits")
    let borrowed = objects.map(Unmanaged.passUnretained)
    return { n in
        var sum = 0
        withExtendedLifetime(objects) {
            for i in 0..<n { sum &+= borrowed[i & 63]._withUnsafeGuaranteedRef { $0.value } }
        }
        precondition(sum != Int.min)
    }
}

/// What `roundRobinSetLoop` sets.
protocol SettableValue: AnyObject, SendableMetatype {
    var value: Int { get set }
}

extension Subject: SettableValue {}
extension Quiet: SettableValue {}

/// A class of its own that nothing ever observes.
final class Quiet: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Quiet.value] }
    @Observed var value = 0
}

/// A subject observed through tokens.
final class TokenWorld {
    let subject = Subject()
    var tokens: [ObservationToken] = []

    init(observers: Int) {
        for _ in 0..<observers { tokens.append(observe()) }
    }

    func observe() -> ObservationToken {
        // A fixture's key path: registration cannot be refused.
        try! subject.observe(\.value, options: .new) { _, _ in perfcheck_tick() }
    }

    var setLoop: (Int) -> Void {
        { n in for i in 0..<n { self.subject.value = i } }
    }
}

/// A subject observed by name (`observe(keyPath: "value")`).
final class ByNameWorld {
    let subject = Subject()
    var tokens: [ObservationToken] = []

    init(observers: Int) {
        for _ in 0..<observers { tokens.append(observe()) }
    }

    func observe() -> ObservationToken {
        // A fixture's key: registration cannot be refused.
        try! subject.observe(keyPath: "value", options: .new) { _, _ in perfcheck_tick() }
    }

    var setLoop: (Int) -> Void {
        { n in for i in 0..<n { self.subject.value = i } }
    }
}

let perfCheckNote = NotificationHub.Name("PerfCheckNote")
final class Sender {}
final class Listener {}

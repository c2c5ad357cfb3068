// An inherited property whose accessors a subclass overrides is observed through the
// override: every callback receives what the key path reads (SPEC §2.17).

import Foundation
import Testing

@testable import SwiftKVO

class AtkOverrideBase: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    static var observableKeyPaths: [String: AnyKeyPath] { ["name": \AtkOverrideBase.name] }
}

final class AtkOverrider: AtkOverrideBase, @unchecked Sendable {
    var shout = true
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

class AtkGenericBase<T>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \AtkGenericBase.name] }
    @Observed var name = ""
}

final class AtkGenericOverrider<T>: AtkGenericBase<T>, @unchecked Sendable {
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

/// `didSet` override, non-final.
class CaTabledDidSet: CaTabledBase, @unchecked Sendable {
    override var name: String {
        didSet { CaRuns.bump("CaTabledDidSet.didSet") }
    }
}

/// get/set override, final.
final class CaTabledUpper: CaTabledBase, @unchecked Sendable {
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

@Suite(.needsLayout("its registrations")) struct OverrideTests {
    @Test func anOverriddenGetterObservedThroughTheBaseKeyPathDeliversWhatItReads() throws {
        let base: AtkOverrideBase = AtkOverrider()
        let recorder = Recorder<String?>()
        let token = try base.observe(\.name, options: [.new]) { object, c in
            recorder.add(c.newValue)
            #expect(c.newValue == object.name, "delivered \(c.newValue ?? "nil"), the key path reads \(object.name)")
        }
        base.name = "ada"
        #expect(recorder.all == ["ADA"])
        _ = token.invalidate()
    }

    @Test func anOverriddenGetterObservedByNameDeliversWhatItReads() throws {
        let object = AtkOverrider()
        let typed = Recorder<String?>()
        let named = Recorder<String?>()
        let t1 = try object.observe(\.name, options: [.initial, .new]) { _, c in typed.add(c.newValue) }
        let t2 = try object.observe(keyPath: "name", options: [.initial, .new]) { _, c in named.add(c.newValue as? String) }
        object.name = "ada"
        try object.setValue("grace", forKey: "name")
        #expect(typed.all == [object.shout ? "" : "", "ADA", "GRACE"].map { Optional($0) })
        // What the name reads, and what its observation delivers:
        #expect(try object.value(forKey: "name") as? String == "GRACE")
        #expect(named.all == typed.all)
        _ = t1.invalidate(); _ = t2.invalidate()
        // One observation whatever the spelling (SPEC §2.19):
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        #expect(try kvo.observe(object, \.name) { _, _, _ in })
        #expect(try kvo.observe(object, keyPath: "name") { _, _, _ in } == false)
    }

    @Test func genericSubclassOverrideDeliversWhatKeyPathReads() throws {
        let object = AtkGenericOverrider<Int>()
        let recorder = Recorder<String?>()
        let token = try object.observe(\.name, options: [.new]) { o, c in
            recorder.add(c.newValue)
            #expect(c.newValue == o.name)
        }
        object.name = "ada"
        #expect(recorder.all == ["ADA"])
        _ = token.invalidate()
    }

    @Test func aDidSetOverrideOfATabledBaseDelivers() throws {
        let object = CaTabledDidSet()
        let log = Recorder<String?>()
        let t1 = try object.observe(\.name, options: .new) { _, change in log.add(change.newValue) }
        let t2 = try (object as CaTabledBase).observe(\.name, options: .new) { _, change in log.add(change.newValue) }
        object.name = "x"
        #expect(log.all == ["x", "x"])
        #expect(CaRuns.count("CaTabledDidSet.didSet") >= 1)
        _ = t1.invalidate()
        _ = t2.invalidate()
    }

    @Test func aGetSetOverrideOfATabledBaseDeliversWhatItReads() throws {
        let object = CaTabledUpper()
        let log = Recorder<String?>()
        let t1 = try object.observe(\.name, options: .new) { _, change in log.add(change.newValue) }
        let t2 = try (object as CaTabledBase).observe(\.name, options: .new) { _, change in log.add(change.newValue) }
        object.name = "x"
        #expect(log.all == ["X", "X"])
        // Before: taken for an override (the class overrides an accessor).
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try object.observe(\.loud) { _, _ in }.invalidate() }
        _ = t1.invalidate()
        _ = t2.invalidate()
    }

    @Test func anInheritedArrayKeepsItsKindsAndIndexesInASubclass() throws {
        // The same mutations on a base object, on a subclass that overrides
        // `name` (didSet), and on one that only overrides the table (the
        // documented macro subclass pattern): each observer of `entries` must
        // see the same changes (SPEC §2 item 2: collection kinds with indexes).
        func run(_ object: CaTabledBase) throws -> [String] {
            let log = Recorder<String>()
            let token = try object.observe(\.entries, options: [.old, .new]) { _, c in
                log.add("\(c.kind) \(Array(c.indexes)) \(String(describing: c.oldValue)) \(String(describing: c.newValue))")
            }
            _ = object.mutableArray(\.entries).insert(5, at: 0)
            _ = object.mutableArray(\.entries).insert(6, at: 1)
            _ = object.mutableArray(\.entries).remove(at: 0)
            object.entries = [9]
            _ = token.invalidate()
            return log.all
        }
        let base = try run(CaTabledBase())
        let didSet = try run(CaTabledDidSet())
        let heir = try run(CaTabledHeir())
        #expect(base.count == 4)
        if isFallbackRun {
            // Without the layout an override cannot be told apart: on a subclass the array is read
            // through its key path, each change a setting without indexes (values still right).
            #expect(didSet == heir)
            #expect(didSet.count == 4 && didSet.allSatisfy { $0.hasPrefix("setting [] ") })
            return
        }
        // Before: a subclass overriding any accessor observed inherited arrays
        // as settings, without indexes.
        #expect(didSet == base)
        #expect(heir == base)
    }
}

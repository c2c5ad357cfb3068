import Synchronization
import Testing
@testable import SwiftKVO

// SPEC §2.17: a property is identified by its declaration — never by where its
// wrapper's initial value was written. Every observer receives exactly its
// own property's changes, whatever built the wrappers.

/// Builds a wrapper in one place for every property: all of them share that
/// source location.
private func observed<T>(_ value: T) -> Observed<T> { Observed(wrappedValue: value) }

final class HelperBuiltBox: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["count": \HelperBuiltBox.count, "text": \HelperBuiltBox.text, "other": \HelperBuiltBox.other] }
    @Observed var count: Int
    @Observed var text: String
    @Observed var other: Int

    init() {
        _count = observed(1)
        _text = observed("hello")
        _other = observed(2)
    }
}

/// One property assigned in two initializers, and one declared without an initial value.
final class TwoInitializersBox: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["level": \TwoInitializersBox.level, "label": \TwoInitializersBox.label] }
    @Observed var level: Int
    @Observed var label: String

    init(fast: Bool) {
        if fast {
            _level = Observed(wrappedValue: 1)
        } else {
            _level = Observed(wrappedValue: 2)
        }
        label = fast ? "fast" : "slow"
    }

    convenience init() { self.init(fast: false) }
}

// Two wrappers on one 300-column line: any column past 65,535 or a clamped column must not merge them.
final class LongLineBox: KeyValueObservable, @unchecked Sendable { let kvoRegistrar = KVORegistrar(); static var observableKeyPaths: [String: AnyKeyPath] { ["first": \LongLineBox.first, "second": \LongLineBox.second, "third": \LongLineBox.third] }; @Observed var first = 0; @Observed var second = 0; @Observed var third = "" ; /* padding to make this declaration line about three hundred columns long......................................................... */ }

class IdentityBase: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["shared": \IdentityBase.shared] }
    @Observed var shared: Int

    init() { _shared = observed(0) }
}

final class IdentityDerived: IdentityBase, @unchecked Sendable {
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["own": \IdentityDerived.own]) { $1 }
    }
    @Observed var own: Int

    override init() {
        _own = observed(0)
        super.init()
    }
}

/// A second class in this file whose wrappers are built by the same helper.
final class HelperBuiltTwin: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["count": \HelperBuiltTwin.count] }
    @Observed var count: Int

    init() { _count = observed(10) }
}

@Suite(.needsLayout("its registrations")) struct PropertyIdentityTests {
    /// Every handler records what it received, by name.
    final class Received: Sendable {
        private let log = LockedState<[String]>([])
        func add(_ entry: String) { log.withLock { $0.append(entry) } }
        var entries: [String] { log.withLock { $0 } }
    }

    @Test func wrappersBuiltByOneHelperAreDistinctProperties() throws {
        let box = HelperBuiltBox()
        let received = Received()
        let count = try box.observe(\.count, options: .new) { _, c in received.add("count=\(c.newValue!)") }
        let text = try box.observe(\.text, options: .new) { _, c in received.add("text=\(c.newValue!)") }
        let other = try box.observe(\.other, options: .new) { _, c in received.add("other=\(c.newValue!)") }
        box.text = "world"
        box.count = 5
        box.other = 7
        #expect(received.entries == ["text=world", "count=5", "other=7"])
        _ = (count, text, other)
    }

    @Test func callbackNeverReceivesAnotherPropertysValue() throws {
        let box = HelperBuiltBox()
        let received = Received()
        let token = try box.observe(\.count, options: [.old, .new]) { _, c in
            received.add("count \(c.oldValue!)→\(c.newValue!)")
        }
        box.text = "a string the Int observer must never see"
        box.other = 99
        #expect(received.entries.isEmpty)
        box.count = 2
        #expect(received.entries == ["count 1→2"])
        token.invalidate()
    }

    @Test func propertyAssignedInSeveralInitializersHasOneKey() throws {
        let fast = TwoInitializersBox(fast: true)
        let slow = TwoInitializersBox()
        let received = Received()
        let tokens = try [fast, slow].map { box in
            try box.observe(\.level, options: .new) { box, c in
                received.add("\(box.label)=\(c.newValue!)")
            }
        }
        fast.level = 10
        slow.level = 20
        #expect(received.entries == ["fast=10", "slow=20"])
        _ = tokens
    }

    @Test func propertyDeclaredWithoutInitialValueIsObservable() throws {
        let box = TwoInitializersBox(fast: true)
        let received = Received()
        let token = try box.observe(\.label, options: .new) { _, c in received.add(c.newValue!) }
        box.label = "renamed"
        box.level = 3
        #expect(received.entries == ["renamed"])
        token.invalidate()
    }

    @Test func wrappersOnOneLongLineAreDistinctProperties() throws {
        let box = LongLineBox()
        let received = Received()
        let first = try box.observe(\.first, options: .new) { _, c in received.add("first=\(c.newValue!)") }
        let second = try box.observe(\.second, options: .new) { _, c in received.add("second=\(c.newValue!)") }
        let third = try box.observe(\.third, options: .new) { _, c in received.add("third=\(c.newValue!)") }
        box.second = 2
        box.third = "3"
        box.first = 1
        #expect(received.entries == ["second=2", "third=3", "first=1"])
        _ = (first, second, third)
    }

    @Test func baseAndSubclassPropertiesBuiltByOneHelperAreDistinct() throws {
        let derived = IdentityDerived()
        let received = Received()
        let shared = try derived.observe(\.shared, options: .new) { _, c in received.add("shared=\(c.newValue!)") }
        let own = try derived.observe(\.own, options: .new) { _, c in received.add("own=\(c.newValue!)") }
        let throughBase = try (derived as IdentityBase).observe(\.shared, options: .new) { _, c in
            received.add("base.shared=\(c.newValue!)")
        }
        derived.own = 1
        derived.shared = 2
        #expect(received.entries == ["own=1", "shared=2", "base.shared=2"])
        _ = (shared, own, throughBase)
    }

    @Test func sameHelperInTwoClassesGivesDistinctProperties() throws {
        let box = HelperBuiltBox()
        let twin = HelperBuiltTwin()
        let received = Received()
        let a = try box.observe(\.count, options: .new) { _, c in received.add("box=\(c.newValue!)") }
        let b = try twin.observe(\.count, options: .new) { _, c in received.add("twin=\(c.newValue!)") }
        twin.count = 11
        box.count = 12
        #expect(received.entries == ["twin=11", "box=12"])
        _ = (a, b)
    }

    @Test func aKeyHasOneValueType() throws {
        let box = HelperBuiltBox()
        let count = try KeyPathRegistry.resolve(\HelperBuiltBox.count, on: box)
        let text = try KeyPathRegistry.resolve(\HelperBuiltBox.text, on: box)
        #expect(count.key != text.key)
        #expect(count.property?.valueType == Int.self)
        #expect(text.property?.valueType == String.self)
    }

    @Test func nestedGenericPrivateAndLocalClassesObservable() throws {
        final class Local: KeyValueObservable, @unchecked Sendable {
            let kvoRegistrar = KVORegistrar()
            static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Local.value] }
            @Observed var value = 0
        }
        let recorder = Recorder<String>()
        let a = AtkOuter.Inner(), b = AtkOther.Inner(), p = AtkPrivate(), l = Local()
        let gi = AtkGeneric(1), gs = AtkGeneric("s"), go = AtkGenericOuter<Int>.Inner()
        var tokens: [ObservationToken] = []
        tokens.append(try a.observe(\.value, options: .new) { _, c in recorder.add("a\(c.newValue!)") })
        tokens.append(try b.observe(\.value, options: .new) { _, c in recorder.add("b\(c.newValue!)") })
        tokens.append(try b.observe(\.token, options: .new) { _, c in recorder.add("t\(c.newValue!.raw)") })
        tokens.append(try p.observe(\.value, options: .new) { _, c in recorder.add("p\(c.newValue!)") })
        tokens.append(try l.observe(\.value, options: .new) { _, c in recorder.add("l\(c.newValue!)") })
        tokens.append(try gi.observe(\.value, options: .new) { _, c in recorder.add("gi\(c.newValue!)") })
        tokens.append(try gs.observe(\.value, options: .new) { _, c in recorder.add("gs\(c.newValue!)") })
        tokens.append(try go.observe(\.value, options: .new) { _, c in recorder.add("go\(c.newValue!)") })
        a.value = 1; b.value = 2; b.token = .init(raw: 7); p.value = 3; l.value = 4
        gi.value = 5; gs.value = "x"; go.value = 6
        #expect(recorder.all == ["a1", "b2", "t7", "p3", "l4", "gi5", "gsx", "go6"])
        #expect(try gs.value(forKey: "value") as? String == "x")
        try gs.setValue("y", forKey: "value")
        #expect(gs.value == "y")
        #expect(throws: KVOError.self) { try gi.setValue("y", forKey: "value") }
        tokens.forEach { _ = $0.invalidate() }
    }
}

final class AtkGeneric<T: Sendable>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var value: T
    init(_ value: T) { self.value = value }
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \AtkGeneric<T>.value] }
}

enum AtkOuter {
    final class Inner: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Inner.value] }
        @Observed var value = 0
    }
    struct Token: Hashable, Sendable { var raw = 0 }
}

enum AtkOther {
    final class Inner: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Inner.value, "token": \Inner.token] }
        @Observed var value = 0
        @Observed var token = AtkOther.Token()
    }
    struct Token: Hashable, Sendable { var raw = 0 }
}

final class AtkGenericOuter<T> {
    final class Inner: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        static var observableKeyPaths: [String: AnyKeyPath] { ["value": \Inner.value] }
        @Observed var value = 0
    }
}

private final class AtkPrivate: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["value": \AtkPrivate.value] }
    @Observed var value = 0
}

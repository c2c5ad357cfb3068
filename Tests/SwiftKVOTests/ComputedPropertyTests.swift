// A computed property is not an observable property (SPEC §2.17): observing it is refused
// by every entry point, and deciding so never runs its getter. The fixtures' getters trap on an
// empty object, so a getter run at registration fails the run.

import Foundation
import Testing

@testable import SwiftKVO

/// `AtkShelf` with a complete name table.
final class AtkTabledShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }
    subscript(index: Int) -> String { items[index] }
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["items": \AtkTabledShelf.items, "title": \AtkTabledShelf.title]
    }
}

final class AtkNamedShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }
    static var observableKeyPaths: [String: AnyKeyPath] { ["first": \AtkNamedShelf.firstItem] }
}

/// A generic class without a table.
final class CaGenUntabled<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    var counted: Int { CaRuns.bump("CaGenUntabled.counted"); return count }
}

/// A base with a `final` wrapper, whose getter the layout cannot look up in
/// the vtable, and a subclass that overrides another accessor.
class CaFinalWrapperBase: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["a": \CaFinalWrapperBase.a, "b": \CaFinalWrapperBase.b] }
    @Observed final var a = 0
    @Observed var b = 0
}

final class CaFinalWrapperSub: CaFinalWrapperBase, @unchecked Sendable {
    override var b: Int {
        get { super.b }
        set { super.b = newValue }
    }
    var boom: Int { CaRuns.bump("CaFinalWrapperSub.boom"); return b }
}

/// A hand-written base and a subclass that overrides one unrelated accessor.
class CaLabelled: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \CaLabelled.name] }
    @Observed var name = ""
    var title: String { "title" }
}

final class CaRelabelled: CaLabelled, @unchecked Sendable {
    override var title: String { "other" }
    var suffix = ""
    /// Computed, not an override: reads `name` and a plain stored property.
    var decorated: String { name + suffix }
}

/// Generic subclass of a non-generic tabled base, with a computed property.
final class CaGenericHeir<Tag>: CaTabledBase, @unchecked Sendable {
    var counted: Int { CaRuns.bump("CaGenericHeir.counted"); return level }
}

@Suite(.needsLayout("its registrations")) struct ComputedPropertyTests {
    @Test func aComputedGetterOfAClassWithoutATableIsNeverRunAtRegistration() {
        let shelf = AtkShelf()
        // `firstItem` is computed: it must be refused from declarations,
        // never evaluated (it traps on an empty shelf).
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.firstItem) { _, _ in } }
    }

    @Test func aClassWithoutATableIsRefusedNamingTheFixAndNothingIsRead() throws {
        // What is observable is what is declared: without a table nothing
        // is, its wrappers included, and no getter runs to decide it.
        let shelf = AtkShelf()
        for register in [
            { _ = try shelf.observe(\.items) { _, _ in } },
            { _ = try shelf.observe(\.title) { _, _ in } },
            { _ = try shelf.observe(\.firstItem) { _, _ in } },
        ] as [() throws -> Void] {
            let error = #expect(throws: KVOError.unsupportedKeyPath) { try register() }
            #expect(error?.detail?.contains("AtkShelf declares no observable key paths: add @KeyValueObservable") == true, "\(String(describing: error))")
        }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.values(for: \.firstItem) }
        #expect(throws: KVOError.unknownKey) { _ = try shelf.value(forKey: "title") }
        shelf.willChangeValue(for: \.firstItem)
        shelf.didChangeValue(for: \.firstItem)
        shelf.title = "still a plain property"
        #expect(shelf.items.isEmpty && shelf.title == "still a plain property")
    }

    @Test func unobservingAComputedPropertyNeverRunsItsGetter() {
        let shelf = AtkShelf()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        #expect(kvo.unobserve(shelf, \.firstItem) == false)
    }

    @Test func aSubclassComputedPropertyThatOverridesNothingIsRefused() throws {
        let sub = AtkSub()
        sub.name = "ada"
        // `alias` is a computed property of the subclass, not an override: SPEC
        // §2.17 says everything that is not a declared observable property is refused.
        var token: ObservationToken?
        let recorder = Recorder<String?>()
        let error = #expect(throws: KVOError.self) {
            token = try sub.observe(\.alias, options: [.new]) { _, change in recorder.add(change.newValue) }
        }
        if error == nil {
            // Accepted: then at least every change of what it reads must arrive.
            sub.loud = true  // the key path now reads "ADA"
            sub.name = "grace"
            #expect(recorder.all.last == .some("GRACE"))
            let delivered = recorder.count
            sub.loud = false  // the key path now reads "grace": nothing can notify
            #expect(sub.alias == "grace")
            #expect(recorder.count > delivered, "accepted, but a change of what it reads never arrives")
            _ = token?.invalidate()
        }
    }

    @Test func aComputedPropertyOfATabledClassIsRefusedWithoutRunningItsGetter() throws {
        let shelf = AtkTabledShelf()  // empty: `firstItem` and the subscript would trap
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.firstItem) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.[3]) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.values(for: \.firstItem) }
        shelf.willChangeValue(for: \.firstItem)
        shelf.didChangeValue(for: \.firstItem)
        let kvo = KVOController(observer: AtkObserver())
        #expect(kvo.unobserve(shelf, \.firstItem) == false)
        #expect(throws: KVOError.unsupportedKeyPath) {
            _ = try kvo.observe(shelf, keyPaths: [\.title, \.firstItem]) { _, _, _ in }
        }
        // Its properties stay observable.
        let titles = Recorder<String?>()
        let token = try shelf.observe(\.title, options: .new) { _, change in titles.add(change.newValue) }
        shelf.title = "t"
        #expect(titles.all == ["t"])
        _ = token.invalidate()
    }

    @Test func willChangeValueForAComputedPropertyNeverRunsItsGetter() {
        let shelf = AtkShelf()
        shelf.willChangeValue(for: \.firstItem)
        shelf.didChangeValue(for: \.firstItem)
    }

    @Test func valuesForAComputedPropertyNeverRunsItsGetter() {
        let shelf = AtkShelf()
        #expect(throws: KVOError.self) { _ = try shelf.values(for: \.firstItem) }
    }

    @Test func observingAComputedTableEntryByNameNeverRunsItsGetter() {
        let shelf = AtkNamedShelf()
        #expect(throws: KVOError.self) { _ = try shelf.observe(keyPath: "first") { _, _ in } }
    }

    @Test func aControllerKeyPathsArrayWithAComputedPropertyNeverRunsItsGetter() {
        let shelf = AtkShelf()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        #expect(throws: KVOError.self) {
            _ = try kvo.observe(shelf, keyPaths: [\.title, \.firstItem]) { _, _, _ in }
        }
    }

    @Test func aComputedPropertyBesideAnOverrideTheLayoutCannotTellIsNeverRun() throws {
        let sub = CaFinalWrapperSub()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try sub.observe(\.boom) { _, _ in } }
        #expect(CaRuns.count("CaFinalWrapperSub.boom") == 0)
        let log = Log<Int>()
        let token = try sub.observe(\.a, options: .new) { _, change in log.append(change.newValue!) }
        sub.a = 3
        #expect(log.values == [3])
        token.invalidate()
    }

    @Test func aGenericClassWithoutATableIsRefusedWithoutRunningAGetter() throws {
        enum Tag {}
        let shelf = CaGenUntabled<Tag>()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.items) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.counted) { _, _ in } }
        #expect(CaRuns.count("CaGenUntabled.counted") == 0)
    }

    @Test func aGenericClassWithACompleteTableRefusesAComputedPropertyWithoutRunningIt() throws {
        // What `@KeyValueObservable final class Person<Tag>` writes: the
        // documentation says a complete table refuses every other component
        // "never evaluated"; DeclaredKeyPaths ignores tables of generic classes.
        enum Tag {}
        let shelf = CaGenTabled<Tag>()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.counted) { _, _ in } }
        #expect(CaRuns.count("CaGenTabled.counted") == 0)
    }

    @Test func aGenericClassWithACompleteTableDoesNotEvaluateAComputedProperty() {
        let shelf = CaGenTabled<Int>()  // empty: `first` traps
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.first) { _, _ in } }
    }

    @Test func aGenericSubclassOfATabledBaseRefusesAComputedPropertyWithoutRunningIt() throws {
        enum Tag {}
        let heir = CaGenericHeir<Tag>()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try heir.observe(\.counted) { _, _ in } }
        // Its inherited properties stay observable.
        let log = Recorder<Int?>()
        let token = try heir.observe(\.level, options: .new) { _, change in log.add(change.newValue) }
        heir.level = 4
        #expect(log.all == [4])
        _ = token.invalidate()
        #expect(CaRuns.count("CaGenericHeir.counted") == 0)
    }

    @Test func aTabledSubclassRefusesItsComputedPropertyWithoutRunningIt() throws {
        let heir = CaTabledHeir()
        let log = Recorder<String>()
        let t1 = try heir.observe(\.extra, options: .new) { _, c in log.add("e\(c.newValue!)") }
        let t2 = try heir.observe(\.level, options: .new) { _, c in log.add("l\(c.newValue!)") }
        // The documented subclass pattern (`override class var
        // observableKeyPaths`, DeclaringWithTheMacro.md) overrides a class
        // property's accessor, which reads nothing an object stores: the
        // tables count, and a computed property is refused unevaluated.
        // (Before: accepted as an "override" of `level`, and evaluated.)
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try heir.observe(\.counted) { _, _ in }.invalidate() }
        #expect(CaRuns.count("CaTabledHeir.counted") == 0)
        heir.extra = 1
        heir.level = 2
        #expect(log.all == ["e1", "l2"])
        let byName = try heir.observe(keyPath: "extra", options: .new) { _, c in log.add("n\(c.newValue as! Int)") }
        heir.extra = 3
        #expect(log.all == ["e1", "l2", "e3", "n3"])
        _ = byName.invalidate()
        _ = t1.invalidate()
        _ = t2.invalidate()
    }

    @Test func aComputedPropertyOfATabledSubclassNeverMissesAChange() throws {
        // `boosted` reads `level` (observable) and `bonus` (plain): it must be
        // refused; accepted, a change of `bonus` changes what it reads.
        let heir = CaTabledHeir()
        let log = Recorder<Int?>()
        // (Before: accepted as an override of `level`, and a change of
        // `bonus` never arrived.)
        #expect(throws: KVOError.unsupportedKeyPath) {
            _ = try heir.observe(\.boosted, options: .new) { _, change in log.add(change.newValue) }
        }
        heir.level = 1
        #expect(log.all.isEmpty)
    }

    @Test func aComputedPropertyOfASubclassThatOverridesAnUnrelatedAccessorIsRefused() throws {
        // aSubclassComputedPropertyThatOverridesNothingIsRefused,
        // with one unrelated override (`title`) in the subclass.
        let object = CaRelabelled()
        let log = Recorder<String?>()
        // Before: taken for an override of `name` because the class overrides
        // some accessor, and a change of `suffix` never arrived.
        #expect(throws: KVOError.unsupportedKeyPath) {
            _ = try object.observe(\.decorated, options: .new) { _, change in log.add(change.newValue) }
        }
        object.name = "a"
        #expect(log.all.isEmpty)
    }

    @Test func aComputedPropertyOfATabledSubclassIsNotEvaluated() {
        let heir = CaTabledHeir()  // no tags: `firstTag` traps
        #expect(throws: KVOError.self) { _ = try heir.observe(\.firstTag) { _, _ in } }
    }
}

// A subscript is never an observable property: it is refused by every entry point (observe,
// values, a controller, unobserve, will/did, by name, as a dependent source) unevaluated.

import Foundation
import Testing

@testable import SwiftKVO

/// Generic class whose name table names a subscript (by-name access to it).
final class CaGenNamedSubscript<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    subscript(index: Int) -> Int { items[index] }
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["items": \CaGenNamedSubscript.items, "count": \CaGenNamedSubscript.count,
         "third": \CaGenNamedSubscript.[2]]
    }
}

/// Generic class with a dependent key whose source is a subscript.
final class CaGenDependent<Tag>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["items": \CaGenDependent.items, "count": \CaGenDependent.count] }
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    subscript(index: Int) -> Int { items[index] }
    var summary: Int { count }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\CaGenDependent.summary: [\CaGenDependent.[2]]]
    }
}

/// A non-generic base with a subscript, and a generic subclass: the argument
/// rule asks whether the *root* class is generic, not the subscript's class.
class CaPlainShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["items": \CaPlainShelf.items, "count": \CaPlainShelf.count] }
    @ObservedArray var items: [Int] = []
    @Observed var count = 0
    /// Traps on an empty shelf.
    subscript(index: Int) -> Int { items[index] }
    subscript(probe index: Int) -> Int { CaRuns.bump("CaPlainShelf.probe"); return count }
    subscript<K: Hashable>(key key: K) -> Int { CaRuns.bump("CaPlainShelf.key"); return count }
    subscript(a: Int, b: String) -> Int { CaRuns.bump("CaPlainShelf.ab"); return count }
}

final class CaGenSubShelf<Tag>: CaPlainShelf, @unchecked Sendable {}

@Suite(.needsLayout("its registrations")) struct SubscriptTests {
    @Test func aSubscriptIsRefusedWithoutEvaluatingIt() {
        // Before: every one of these died with "Index out of range" (the key
        // path was evaluated on the empty shelf). A subscript is told from a
        // property by its component's arguments, read without evaluating.
        let shelf = AtkShelf()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.[3]) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.values(for: \.[3]) }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try kvo.observe(shelf, \.[3]) { _, _, _ in } }
        #expect(kvo.unobserve(shelf, \.[3]) == false)
        shelf.willChangeValue(for: \.[3])
        shelf.didChangeValue(for: \.[3])
        #expect(shelf.items.isEmpty)
    }

    @Test func aGenericClassSubscriptIsRefusedWithoutRunningIt() {
        // The argument rule lets a generic class's computed components carry
        // arguments; a subscript of one is then no longer "a subscript".
        enum Tag {}
        let shelf = CaGenShelf<Tag>()
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[probe: 0]) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[key: "k"]) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[1, "x"]) { _, _ in } }
        #expect(CaRuns.count("CaGenShelf.probe") == 0)
        #expect(CaRuns.count("CaGenShelf.key") == 0)
        #expect(CaRuns.count("CaGenShelf.ab") == 0)
    }

    @Test func aGenericClassSubscriptIsNotEvaluatedAtRegistration() {
        let shelf = CaGenShelf<Int>()  // empty: `shelf[3]` traps
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[3]) { _, _ in } }
    }

    @Test func aGenericClassSubscriptIsNotEvaluatedByUnobserve() {
        let shelf = CaGenShelf<Int>()
        let kvo = KVOController(observer: CaObserver())
        #expect(kvo.unobserve(shelf, \.[3]) == false)
    }

    @Test func aGenericClassSubscriptIsNotEvaluatedByWillChangeValue() {
        let shelf = CaGenShelf<Int>()
        shelf.willChangeValue(for: \.[3])
        shelf.didChangeValue(for: \.[3])
    }

    @Test func aGenericClassSubscriptInTheNameTableIsNotEvaluatedByName() {
        let shelf = CaGenNamedSubscript<Int>()
        #expect(throws: KVOError.self) { _ = try shelf.observe(keyPath: "third") { _, _ in } }
    }

    @Test func aGenericClassSubscriptAsADependentSourceIsNotEvaluated() {
        let shelf = CaGenDependent<Int>()
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.summary) { _, _ in } }
    }

    @Test func aSubscriptOfANonGenericBaseReachedThroughAGenericSubclassIsRefusedWithoutRunningIt() {
        enum Tag {}
        let shelf = CaGenSubShelf<Tag>()
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[probe: 1]) { _, _ in } }
        #expect(CaRuns.count("CaPlainShelf.probe") == 0)
        // The same subscripts through the base are refused unevaluated.
        let base = CaPlainShelf()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try base.observe(\.[3]) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try base.observe(\.[key: 1.5]) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try base.observe(\.[2, "b"]) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try base.values(for: \.[key: "k"]) }
        #expect(CaRuns.count("CaPlainShelf.key") == 0)
        #expect(CaRuns.count("CaPlainShelf.ab") == 0)
    }

    @Test func aSubscriptOfANonGenericBaseReachedThroughAGenericSubclassIsNotEvaluated() {
        let shelf = CaGenSubShelf<Int>()  // empty: `shelf[3]` traps
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[3]) { _, _ in } }
    }

    @Test func aSubscriptWithoutArgumentsOfAClassWithoutATableIsNeverRun() {
        // `subscript() -> Int`: no arguments, so the shape cannot tell it is a
        // subscript; the class declares nothing observable, so it is refused
        // before anything is read (it traps on an empty shelf).
        let shelf = CaBareShelf()
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.[]) { _, _ in } }
    }
}

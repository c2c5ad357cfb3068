// HostileUseTests.swift — key path resolution, key-value coding by name,
// @ObservedSet, Observation bridging and introspection used the way a new
// user and an adversary would: odd key paths and names, wrong types,
// re-entrant callbacks, threads, object death mid-chain.
//
// What is still open is marked, never hidden: a case that fails today runs
// inside `withKnownIssue` (the test fails once it stops failing, so the mark
// cannot outlive the fix), and the cases that trap the process (a computed
// getter of a class without a complete name table, whose wrappers have not
// all reported yet, is evaluated once at registration) run only with
// SWIFTKVO_HOSTILE_TRAPS=1, one at a time:
//   SWIFTKVO_HOSTILE_TRAPS=1 swift test --filter HostileUseTests/<name>

import Foundation
import Observation
import Synchronization
import Testing

@testable import SwiftKVO

private let trapsEnabled = ProcessInfo.processInfo.environment["SWIFTKVO_HOSTILE_TRAPS"] != nil

/// Collects values from callbacks on any thread.
final class AttackRecorder<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func add(_ item: T) { lock.lock(); items.append(item); lock.unlock() }
    var all: [T] { lock.lock(); defer { lock.unlock() }; return items }
    var count: Int { all.count }
}

// MARK: - Fixtures

final class AtkShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    /// A computed property of the same type as `title`, whose getter traps on
    /// an empty shelf.
    var firstItem: String { items[0] }
    subscript(index: Int) -> String { items[index] }
}

/// `AtkShelf`'s twin, for the one test that reads its wrappers first.
final class AtkReportedShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }
}

final class AtkCard: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }
    var headline: String { title + (items.first ?? "") }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\AtkCard.headline: [\AtkCard.title, \AtkCard.firstItem]]
    }
}

class AtkBase: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    @ObservedArray var items: [String] = []
    @ObservedSet var tags: Set<String> = []
    class var observableKeyPaths: [String: AnyKeyPath] {
        ["name": \AtkBase.name, "items": \AtkBase.items, "tags": \AtkBase.tags]
    }
}

final class AtkSub: AtkBase, @unchecked Sendable {
    /// Not observable (plain stored).
    var loud = false
    /// A computed property (not an override) reading the base's observable
    /// `name` and a plain flag.
    var alias: String { loud ? name.uppercased() : name }
}

final class AtkWallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var balance = 0.0
    var plain = 0.0
    /// Computed, of the same type as `balance`, reading a plain property.
    var cents: Double { plain * 100 }
    static var observableKeyPaths: [String: AnyKeyPath] { ["balance": \AtkWallet.balance] }
}

/// `AtkWallet` without a name table.
final class AtkBareWallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var balance = 0.0
    var plain = 0.0
    var cents: Double { plain * 100 }
}

final class AtkBareOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: AtkBareWallet?
}

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

final class AtkOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: AtkWallet?
    @Observed var label = ""
    var constant = 1
    let fixed = 2
    var computedName: String { label }
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "label": \AtkOwner.label,
            "wallet": \AtkOwner.wallet,
            "computed": \AtkOwner.computedName,
            "plain": \AtkOwner.constant,
            "fixed": \AtkOwner.fixed,
            "foreign": \AtkWallet.balance,  // rooted in another class
            "dotted.name": \AtkOwner.label,
            "ünïcødé": \AtkOwner.label,
            "": \AtkOwner.label,
        ]
    }
}

struct AtkPoint: Sendable { var x = 0; var y = 0 }

final class AtkShapes: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var point = AtkPoint()
    @Observed var pair = (1, 2)
    @Observed var maybe: Int? = nil
    @Observed var nested: Int?? = nil
    @Observed var count = 0
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["point": \AtkShapes.point, "x": \AtkShapes.point.x, "maybe": \AtkShapes.maybe,
         "nested": \AtkShapes.nested, "count": \AtkShapes.count]
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
        @Observed var value = 0
    }
    struct Token: Hashable, Sendable { var raw = 0 }
}

enum AtkOther {
    final class Inner: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        @Observed var value = 0
        @Observed var token = AtkOther.Token()
    }
    struct Token: Hashable, Sendable { var raw = 0 }
}

final class AtkGenericOuter<T> {
    final class Inner: KeyValueObservable, @unchecked Sendable {
        let kvoRegistrar = KVORegistrar()
        @Observed var value = 0
    }
}

private final class AtkPrivate: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var value = 0
}

final class AtkBridged: ObservationBridged, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    let observationRegistrar = ObservationRegistrar()
    @Observed var count = 0
    @ObservedSet var tags: Set<Int> = []
}

final class AtkTeam: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedSet var members: Set<Int> = []
    @ObservedArray var list: [Int] = []
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["members": \AtkTeam.members, "list": \AtkTeam.list]
    }
}

final class AtkHolder: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var owner: AtkOwner = AtkOwner()
    static var observableKeyPaths: [String: AnyKeyPath] { ["owner": \AtkHolder.owner] }
}

final class AtkObserver: @unchecked Sendable {}

private func isUnsupported(_ error: KVOError) -> Bool {
    error == .unsupportedKeyPath || error == .forceUnwrappedKeyPath
}

@Suite struct HostileUseTests {

    // MARK: - Resolution: traps

    @Test(.enabled(if: trapsEnabled))
    func trapsTodayAComputedGetterIsEvaluatedAtRegistration() {
        let shelf = AtkShelf()
        // `firstItem` is computed: it must be refused from declarations,
        // never evaluated (it traps on an empty shelf).
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.firstItem) { _, _ in } }
    }

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

    @Test func aComputedPropertyIsRefusedWithoutRunningItsGetterOnceTheWrappersHaveReported() throws {
        // A class without a name table: each wrapper reports its property's
        // identity when first observed. Once all have, a computed property is
        // known not to be one of them, and is refused without being read.
        let shelf = AtkReportedShelf()
        _ = try shelf.observe(\.items) { _, _ in }.invalidate()
        _ = try shelf.observe(\.title) { _, _ in }.invalidate()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.firstItem) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.values(for: \.firstItem) }
        shelf.willChangeValue(for: \.firstItem)
        shelf.didChangeValue(for: \.firstItem)
        #expect(shelf.items.isEmpty)
    }

    @Test(.enabled(if: trapsEnabled))
    func trapsTodayUnobservingAComputedPropertyEvaluatesIt() {
        let shelf = AtkShelf()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        #expect(kvo.unobserve(shelf, \.firstItem) == false)
    }

    @Test(.enabled(if: trapsEnabled))
    func trapsTodayAComputedDependentSourceIsEvaluated() {
        let card = AtkCard()
        // Nothing observed: the first assignment resolves the sources.
        card.title = "x"
        #expect(throws: KVOError.self) { _ = try card.observe(\.headline) { _, _ in } }
    }

    // MARK: - Resolution: wrong acceptance

    @Test func aSubclassComputedPropertyThatOverridesNothingIsRefused() throws {
        let sub = AtkSub()
        sub.name = "ada"
        // `alias` is a computed property of the subclass, not an override: SPEC
        // §2.17 says everything that is not a declared observable property is refused.
        var token: ObservationToken?
        let recorder = AttackRecorder<String?>()
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

    @Test func anOptionalChainThroughNilToAComputedLeafOfATabledClassIsRefused() throws {
        // Before: accepted while the wallet was nil, and a change of what
        // `cents` reads never arrived. The wallet's name table says which
        // components are its observable properties, with no wallet to read.
        let owner = AtkOwner()
        #expect(throws: KVOError.unsupportedKeyPath) {
            _ = try owner.observe(\.wallet?.cents, options: [.new]) { _, _ in }
        }
        #expect(owner.wallet == nil)
    }

    @Test func knownIssueAnOptionalChainThroughNilToAComputedLeafOfAnUntabledClassIsAccepted() throws {
        // Without a complete name table nothing tells a computed leaf from a
        // property before a wallet exists to read: the registration is
        // accepted and never delivers (open).
        let owner = AtkBareOwner()
        var token: ObservationToken?
        withKnownIssue("accepted while the link is nil; a change of what it reads never arrives") {
            #expect(throws: KVOError.self) {
                token = try owner.observe(\.wallet?.cents, options: [.new]) { _, _ in }
            }
        }
        _ = token?.invalidate()
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
        let titles = AttackRecorder<String?>()
        let token = try shelf.observe(\.title, options: .new) { _, change in titles.add(change.newValue) }
        shelf.title = "t"
        #expect(titles.all == ["t"])
        _ = token.invalidate()
    }

    @Test func optionalChainThroughNonNilComputedLeafRefused() {
        let owner = AtkOwner()
        owner.wallet = AtkWallet()
        #expect(throws: KVOError.self) { _ = try owner.observe(\.wallet?.cents) { _, _ in } }
    }

    @Test func structTupleOptionalAndExistentialPathsRefused() {
        let shapes = AtkShapes()
        #expect(throws: KVOError.self) { _ = try shapes.observe(\.point.x) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try shapes.observe(\.pair.0) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try shapes.observe(\.maybe!) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try shapes.observe(\.maybe?.bitWidth) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try shapes.observe(\.self) { _, _ in } }
        let owner = AtkOwner()
        #expect(throws: KVOError.self) { _ = try owner.observe(\.constant) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try owner.observe(\.fixed) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try owner.observe(\.computedName) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try owner.observe(\.wallet!.balance) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try owner.observe(\.label.count) { _, _ in } }
    }

    @Test func optionalChainThroughNilDeliversLater() throws {
        let owner = AtkOwner()
        let recorder = AttackRecorder<Double?>()
        let token = try owner.observe(\.wallet?.balance, options: [.new]) { _, change in
            recorder.add(change.newValue ?? nil)
        }
        let wallet = AtkWallet()
        wallet.balance = 1
        owner.wallet = wallet
        wallet.balance = 2
        owner.wallet = nil
        wallet.balance = 3  // detached: no delivery
        #expect(recorder.all == [1, 2, nil])
        _ = token.invalidate()
    }

    @Test func nestedGenericPrivateAndLocalClassesObservable() throws {
        final class Local: KeyValueObservable, @unchecked Sendable {
            let kvoRegistrar = KVORegistrar()
            @Observed var value = 0
        }
        let recorder = AttackRecorder<String>()
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

    // MARK: - Key-value coding

    @Test func kvcUnknownAndMalformedNamesThrowAndChangeNothing() throws {
        let owner = AtkOwner()
        owner.label = "keep"
        let recorder = AttackRecorder<Int>()
        let token = try owner.observe(\.label) { _, _ in recorder.add(1) }
        for name in ["nope", ".", "label.", ".label", "label..x", "wallet.balance.x", "LABEL",
                     "label ", "wallet.", "foreign", "dotted.name", "label.count"] {
            #expect(throws: KVOError.self, "\(name)") { try owner.setValue("x", forKey: name) }
            #expect(throws: KVOError.self, "\(name)") { _ = try owner.observe(keyPath: name) { _, _ in } }
        }
        #expect(owner.label == "keep")
        #expect(recorder.count == 0)
        // Wrong types, nil where not optional, non-writable and computed entries.
        #expect(throws: KVOError.self) { try owner.setValue(3, forKey: "label") }
        #expect(throws: KVOError.self) { try owner.setValue(nil, forKey: "label") }
        #expect(throws: KVOError.self) { try owner.setValue(Optional<String>.none as Any, forKey: "label") }
        #expect(throws: KVOError.self) { try owner.setValue(AtkOwner(), forKey: "wallet") }
        #expect(throws: KVOError.self) { try owner.setValue(5, forKey: "fixed") }
        #expect(throws: KVOError.self) { try owner.setValue("x", forKey: "computed") }
        #expect(throws: KVOError.self) { _ = try owner.observe(keyPath: "computed") { _, _ in } }
        #expect(throws: KVOError.self) { _ = try owner.observe(keyPath: "plain") { _, _ in } }
        #expect(throws: KVOError.self) { _ = try owner.value(forKeyPath: "label", as: Int.self) }
        #expect(throws: KVOError.self) { _ = try owner.mutableArrayValue(forKey: "label", of: Character.self) }
        #expect(owner.label == "keep")
        #expect(recorder.count == 0)
        // Unicode and empty names in the table work as names.
        try owner.setValue("ü", forKey: "ünïcødé")
        #expect(owner.label == "ü")
        try owner.setValue("empty", forKey: "")
        #expect(owner.label == "empty")
        #expect(recorder.count == 2)
        // wallet nil on the way: notFound, nothing changes.
        #expect(throws: KVOError.self) { try owner.setValue(1.0, forKeyPath: "wallet.balance") }
        _ = token.invalidate()
    }

    @Test func kvcOptionalAndNestedOptional() throws {
        let shapes = AtkShapes()
        #expect(try shapes.value(forKey: "maybe") == nil)
        try shapes.setValue(4, forKey: "maybe")
        #expect(shapes.maybe == 4)
        try shapes.setValue(nil, forKey: "maybe")
        #expect(shapes.maybe == nil)
        try shapes.setValue(Int?.some(5), forKey: "nested")
        #expect(shapes.nested == .some(.some(5)))
        try shapes.setValue(nil, forKey: "nested")
        #expect(shapes.nested == .none)
        #expect(throws: KVOError.self) { try shapes.setValue(2.5, forKey: "count") }
        #expect(throws: KVOError.self) { try shapes.setValue("3", forKey: "count") }
        #expect(throws: KVOError.self) { try shapes.setValue(Int64(3), forKey: "count") }
        #expect(shapes.count == 0)
        // A struct member by name: writable, but not observable.
        try shapes.setValue(9, forKey: "x")
        #expect(shapes.point.x == 9)
        #expect(throws: KVOError.self) { _ = try shapes.observe(keyPath: "x") { _, _ in } }
        let read = try shapes.value(forKeyPath: "maybe", as: Int?.self)
        #expect(read == nil)
    }

    @Test func mutableArrayValueOfASubclassInstanceThroughTheBaseTable() throws {
        let object: AtkBase = AtkSub()
        // `items` is `[String]` in the base's table; the instance is a subclass.
        let mutator = try object.mutableArrayValue(forKey: "items", of: String.self)
        mutator.append("x")
        #expect(object.items == ["x"])
    }

    @Test func mutableSetValueOfASubclassInstanceThroughTheBaseTable() throws {
        let object: AtkBase = AtkSub()
        let mutator = try object.mutableSetValue(forKey: "tags", of: String.self)
        mutator.insert("x")
        #expect(object.tags == ["x"])
    }

    @Test func kvcOnSubclassInstanceOfBaseTable() throws {
        let sub = AtkSub()
        try sub.setValue("n", forKey: "name")
        #expect(sub.name == "n")
        let recorder = AttackRecorder<Any?>()
        let token = try sub.observe(keyPath: "name", options: .new) { _, c in recorder.add(c.newValue) }
        sub.name = "m"
        #expect(recorder.all.last as? String == "m")
        _ = token.invalidate()
        let base: AtkBase = sub
        let t2 = try base.observe(keyPath: "name", options: .new) { _, c in recorder.add(c.newValue) }
        base.name = "k"
        #expect(recorder.all.last as? String == "k")
        _ = t2.invalidate()
    }

    @Test func kvcByNameAndTypedAreOneObservationInController() throws {
        let owner = AtkOwner()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        let recorder = AttackRecorder<String>()
        #expect(try kvo.observe(owner, \.label, options: .new) { _, _, c in recorder.add("typed \(c.newValue!)") })
        #expect(try kvo.observe(owner, keyPath: "label", options: .new) { _, _, c in recorder.add("name \(c.newValue!)") } == false)
        #expect(try kvo.observe(owner, keyPath: "ünïcødé", options: .new) { _, _, _ in recorder.add("alias") } == false)
        owner.label = "a"
        #expect(recorder.all == ["typed a"])
        #expect(kvo.unobserve(owner, keyPath: "") == true)
        owner.label = "b"
        #expect(recorder.all == ["typed a"])
        #expect(kvo.unobserve(owner, \.label) == false)
        // Chains by name and typed: the same too.
        let holder = AtkHolder()
        #expect(try kvo.observe(holder, keyPath: "owner.label", options: .new) { _, _, c in recorder.add("chain \(c.newValue as? String ?? "?")") })
        #expect(try kvo.observe(holder, \.owner.label, options: .new) { _, _, _ in recorder.add("dup") } == false)
        holder.owner.label = "c"
        #expect(recorder.all.last == "chain c")
        #expect(kvo.unobserve(holder, \.owner.label))
        holder.owner.label = "d"
        #expect(recorder.all.last == "chain c")
        #expect(kvo.unobserve(holder, keyPath: "owner.label") == false)
        #expect(kvo.unobserve(holder, keyPath: "no.such") == false)
    }

    @Test func kvcConcurrentSetAndObserveByName() async throws {
        // One object per thread for the assignments (a property's stored value
        // is not atomic: concurrent assignments of one object's property need
        // the user's lock); registrations by name contend on one shared object.
        let owners = (0..<8).map { _ in AtkOwner() }
        let shared = AtkOwner()
        let delivered = Atomic<Int>(0)
        let tokens = try owners.map { owner in
            try owner.observe(keyPath: "label") { _, _ in delivered.add(1, ordering: .relaxed) }
        }
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for j in 0..<500 {
                if j % 2 == 0 { try? owners[i].setValue("\(i)-\(j)", forKey: "label") }
                else { #expect(throws: KVOError.self) { try owners[i].setValue(j, forKey: "label") } }
                let t = try? shared.observe(keyPath: "label") { _, _ in }
                _ = t?.invalidate()
            }
        }
        #expect(delivered.load(ordering: .relaxed) == 8 * 250)
        for token in tokens { _ = token.invalidate() }
    }

    // MARK: - Sets

    @Test func setMutationsCarryMembersAndPriorObserverReentrancy() throws {
        let team = AtkTeam()
        team.members = [1, 2, 3]
        let recorder = AttackRecorder<(ChangeKind, Bool, Set<Int>?, Set<Int>?)>()
        let prior = try team.observe(\.members, options: [.prior, .old, .new]) { t, change in
            if change.isPrior && change.kind == .removal && t.members.contains(3) {
                // A prior observer empties the set before the removal happens.
                t.members = []
            }
        }
        let token = try team.observe(\.members, options: [.old, .new]) { _, change in
            recorder.add((change.kind, change.isPrior, change.oldValue, change.newValue))
        }
        team.mutableSet(\.members).remove(3)
        let last = recorder.all.last
        #expect(last?.0 == .removal)
        #expect(last?.2 == [])  // nothing was left to remove
        #expect(team.members == [])
        _ = prior.invalidate()
        team.mutableSet(\.members).formUnion([4, 5])
        #expect(recorder.all.last?.0 == .insertion)
        #expect(recorder.all.last?.3 == [4, 5])
        team.mutableSet(\.members).replaceAll(with: [5, 6])
        #expect(recorder.all.last?.0 == .replacement)
        #expect(recorder.all.last?.2 == [4])
        #expect(recorder.all.last?.3 == [6])
        try team.mutableSetValue(forKey: "members", of: Int.self).formIntersection([6])
        #expect(team.members == [6])
        #expect(throws: KVOError.self) { _ = try team.mutableSetValue(forKey: "members", of: String.self) }
        #expect(throws: KVOError.self) { _ = try team.mutableSetValue(forKey: "list", of: Int.self) }
        _ = token.invalidate()
    }

    @Test func arrayPriorObserverEmptiesArrayThenMutatorsNoTrap() throws {
        let team = AtkTeam()
        team.list = [1, 2, 3]
        let token = try team.observe(\.list, options: [.prior]) { t, change in
            if change.isPrior && !t.list.isEmpty { t.list = [] }
        }
        #expect(team.mutableArray(\.list).remove(at: 2) == nil)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).replace(at: 2, with: 9) == false)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).insert(7, at: 3) == false)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).remove(at: [0, 2]) == false)
        team.list = [1, 2, 3]
        #expect(team.mutableArray(\.list).removeLast() == nil)
        _ = token.invalidate()
    }

    @Test func setValuesYieldWholeSets() async throws {
        let team = AtkTeam()
        let stream = try team.values(for: \.members, bufferingPolicy: .unbounded)
        team.mutableSet(\.members).insert(1)
        team.mutableSet(\.members).insert(2)
        team.mutableSet(\.members).remove(1)
        var seen: [Set<Int>] = []
        for await v in stream {
            seen.append(v)
            if seen.count == 4 { break }
        }
        #expect(seen == [[], [1], [1, 2], [2]])
    }

    @Test func concurrentSetMutatorsExactlyOnce() throws {
        let team = AtkTeam()
        let delivered = Atomic<Int>(0)
        let token = try team.observe(\.members) { _, _ in delivered.add(1, ordering: .relaxed) }
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for j in 0..<500 {
                lock.lock()  // values are not atomic; notifications are what is counted
                team.mutableSet(\.members).insert(i * 1000 + j)
                lock.unlock()
            }
        }
        #expect(delivered.load(ordering: .relaxed) == 2000)
        #expect(team.members.count == 2000)
        _ = token.invalidate()
    }

    // MARK: - Reentrancy and concurrency of registration

    @Test func noCallAfterInvalidateUnderConcurrency() throws {
        let owner = AtkOwner()
        let violations = Atomic<Int>(0)
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for _ in 0..<300 {
                let dead = Atomic<Bool>(false)
                let token: ObservationToken?
                if i % 2 == 0 {
                    token = try? owner.observe(\.label) { _, _ in
                        if dead.load(ordering: .acquiring) { violations.add(1, ordering: .relaxed) }
                    }
                } else {
                    token = try? owner.observe(keyPath: "label") { _, _ in
                        if dead.load(ordering: .acquiring) { violations.add(1, ordering: .relaxed) }
                    }
                }
                lock.withLock { owner.label = "x" }  // stored values are not atomic
                try? token?.invalidateAndWait()
                dead.store(true, ordering: .releasing)
                #expect(token?.isValid == false)
                lock.withLock { owner.label = "y" }
            }
        }
        #expect(violations.load(ordering: .relaxed) == 0)
    }

    @Test func reentrantUnobserveAndReregisterFromCallback() throws {
        let owner = AtkOwner()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        let recorder = AttackRecorder<String>()
        try kvo.observe(owner, keyPath: "label", options: [.prior, .new]) { _, o, change in
            recorder.add(change.isPrior ? "prior" : "post")
            if change.isPrior {
                // Unobserve by typed key path, then re-register by name, mid-dispatch.
                _ = kvo.unobserve(o, \.label)
                _ = try? kvo.observe(o, keyPath: "label", options: .new) { _, _, _ in recorder.add("new") }
            }
        }
        owner.label = "a"
        // The post-change dispatch starts after the re-registration: it gets "a".
        #expect(recorder.all == ["prior", "new"])
        owner.label = "b"
        #expect(recorder.all == ["prior", "new", "new"])
        _ = kvo.unobserveAll()
    }

    @Test func chainReleasesHandlerWhenRootDies() async throws {
        final class Canary: @unchecked Sendable {}
        weak var weakCanary: Canary?
        var token: ObservationToken?
        do {
            let holder = AtkHolder()
            let canary = Canary()
            weakCanary = canary
            token = try holder.observe(\.owner.label) { _, _ in _ = canary }
            let byName = try holder.observe(keyPath: "owner.label") { _, _ in _ = canary }
            _ = byName  // dropped at end of scope
        }
        for _ in 0..<50 where weakCanary != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(weakCanary == nil)
        #expect(token?.isValid == false)
        #expect(token?.invalidate() == false)
    }

    @Test func chainRootDiesWhileOtherThreadsMutateIntermediate() throws {
        for _ in 0..<200 {
            let owner = AtkOwner()
            var holder: AtkHolder? = AtkHolder()
            holder!.owner = owner
            let token = try holder!.observe(\.owner.label, options: [.old, .new]) { _, _ in }
            let done = Atomic<Bool>(false)
            let t = Thread { while !done.load(ordering: .relaxed) { owner.label = "z" } }
            t.start()
            holder = nil
            done.store(true, ordering: .relaxed)
            while !t.isFinished { usleep(100) }
            #expect(token.isValid == false)
        }
    }

    // MARK: - Introspection

    @Test func introspectionWhileMutating() throws {
        let owner = AtkOwner()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        try kvo.observe(owner, keyPath: "label") { _, _, _ in
            _ = kvo.description
            _ = kvo.observedKeyPaths(of: owner)
            _ = EngineStatistics.current
        }
        let lock = NSLock()  // the stored value is not atomic; introspection is what contends
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<200 {
                lock.withLock { owner.label = "x" }
                _ = kvo.description
                _ = kvo.observedObjects
            }
        }
        #expect(kvo.observedKeyPaths(of: owner).count == 1)
        #expect(kvo.description.contains("label"))
        _ = NotificationHub.default.registrations(of: observer)
    }

    // MARK: - Observation bridging

    @Test func bridgedObservationTrackingWithConcurrentMutation() throws {
        let bridged = AtkBridged()
        let fired = Atomic<Int>(0)
        for _ in 0..<50 {
            withObservationTracking {
                _ = bridged.count
                _ = bridged.tags
            } onChange: {
                fired.add(1, ordering: .relaxed)
            }
        }
        let kvoDelivered = Atomic<Int>(0)
        let token = try bridged.observe(\.count) { _, _ in kvoDelivered.add(1, ordering: .relaxed) }
        let lock = NSLock()
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for j in 0..<250 {
                lock.lock()
                if j % 2 == 0 { bridged.count += 1 } else { bridged.mutableSet(\.tags).insert(i * 1000 + j) }
                lock.unlock()
                withObservationTracking { _ = bridged.count } onChange: { fired.add(1, ordering: .relaxed) }
            }
        }
        #expect(kvoDelivered.load(ordering: .relaxed) == 500)
        #expect(fired.load(ordering: .relaxed) >= 50)
        _ = token.invalidate()
    }

    @Test func bridgedSetMutatorNotifiesObservation() {
        let bridged = AtkBridged()
        let fired = Atomic<Int>(0)
        withObservationTracking { _ = bridged.tags } onChange: { fired.add(1, ordering: .relaxed) }
        bridged.mutableSet(\.tags).insert(1)
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    // MARK: - Tokens

    @Test func tokenValidityAfterDeath() throws {
        var owner: AtkOwner? = AtkOwner()
        let plain = try owner!.observe(\.label) { _, _ in }
        let named = try owner!.observe(keyPath: "label") { _, _ in }
        let chain = try owner!.observe(\.wallet?.balance) { _, _ in }
        owner = nil
        #expect(plain.isValid == false)
        #expect(named.isValid == false)
        #expect(chain.isValid == false)
        #expect(plain.invalidate() == false)
        #expect(named.invalidate() == false)
        #expect(chain.invalidate() == false)
    }

    // MARK: - More traps and silent registrations

    @Test func aComputedDependentSourceDoesNotTrapAPlainAssignment() {
        let card = AtkCard()
        card.title = "x"  // no observer anywhere
        #expect(card.title == "x")
    }

    @Test(.enabled(if: trapsEnabled))
    func findingWillChangeValueForComputedTraps() {
        let shelf = AtkShelf()
        shelf.willChangeValue(for: \.firstItem)
        shelf.didChangeValue(for: \.firstItem)
    }

    @Test(.enabled(if: trapsEnabled))
    func findingValuesForComputedTraps() {
        let shelf = AtkShelf()
        #expect(throws: KVOError.self) { _ = try shelf.values(for: \.firstItem) }
    }

    @Test(.enabled(if: trapsEnabled))
    func findingObserveByNameOfComputedTableEntryTraps() {
        let shelf = AtkNamedShelf()
        #expect(throws: KVOError.self) { _ = try shelf.observe(keyPath: "first") { _, _ in } }
    }

    @Test(.enabled(if: trapsEnabled))
    func findingControllerKeyPathsArrayComputedTraps() {
        let shelf = AtkShelf()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        #expect(throws: KVOError.self) {
            _ = try kvo.observe(shelf, keyPaths: [\.title, \.firstItem]) { _, _, _ in }
        }
    }

    @Test func optionalChainToOptionalLeafThroughNil() throws {
        let owner = AtkOptOwner()
        let recorder = AttackRecorder<(Int??, Int??)>()
        let token = try owner.observe(\.inner?.maybe, options: [.old, .new]) { o, change in
            recorder.add((change.oldValue, change.newValue))
            #expect(change.newValue == .some(o.inner?.maybe))
        }
        let inner = AtkOptInner()
        owner.inner = inner
        inner.maybe = 5
        inner.maybe = nil
        inner.maybe = 7
        owner.inner = nil
        let news = recorder.all.map { $0.1 }
        #expect(news.count == 5)
        #expect(news.map { $0 ?? nil } == [nil, 5, nil, 7, nil])
        _ = token.invalidate()
    }

    @Test func valuesStreamEndsWhenObjectDies() async throws {
        var owner: AtkOwner? = AtkOwner()
        let stream = try owner!.values(for: \.label, bufferingPolicy: .unbounded)
        owner!.label = "a"
        owner = nil
        var seen: [String] = []
        for await v in stream { seen.append(v) }
        #expect(seen == ["", "a"])
    }

    @Test func kvcChainReplacementOfIntermediateByName() throws {
        let holder = AtkHolder()
        let recorder = AttackRecorder<(Any?, Any?)>()
        let token = try holder.observe(keyPath: "owner.label", options: [.old, .new]) { _, c in
            recorder.add((c.oldValue, c.newValue))
        }
        let next = AtkOwner()
        next.label = "n"
        holder.owner = next
        next.label = "m"
        #expect(recorder.all.map { $0.1 as? String } == ["n", "m"])
        #expect(recorder.all.map { $0.0 as? String } == ["", "n"])
        _ = token.invalidate()
    }
}

final class AtkNamedShelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }
    static var observableKeyPaths: [String: AnyKeyPath] { ["first": \AtkNamedShelf.firstItem] }
}

final class AtkOptInner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var maybe: Int? = nil
}

final class AtkOptOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var inner: AtkOptInner?
}

extension HostileUseTests {
    @Test func concurrentFirstResolutionOfFreshClass() throws {
        let objects = (0..<8).map { _ in AtkFresh() }
        let delivered = Atomic<Int>(0)
        let tokens = LockedState<[ObservationToken]>([])  // a lock ThreadSanitizer sees
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let object = objects[i]
            var mine: [ObservationToken] = []
            do {
                mine.append(try object.observe(\.a) { _, _ in delivered.add(1, ordering: .relaxed) })
                mine.append(try object.observe(keyPath: "b") { _, _ in delivered.add(1, ordering: .relaxed) })
                mine.append(try object.observe(\.sum) { _, _ in delivered.add(1, ordering: .relaxed) })
                mine.append(try object.observe(\.child?.a) { _, _ in delivered.add(1, ordering: .relaxed) })
            } catch {
                Issue.record("registration failed: \(error)")
            }
            object.a = 1  // a, sum
            object.b = 2  // b, sum
            object.child = AtkFresh()  // child?.a
            object.child?.a = 3  // child?.a
            tokens.withLock { $0.append(contentsOf: mine) }
        }
        #expect(delivered.load(ordering: .relaxed) == 8 * 6)
        tokens.withLock { $0.forEach { _ = $0.invalidate() } }
    }

    @Test func byNameChangeCarriesTypedKeyPath() throws {
        let owner = AtkOwner()
        let paths = AttackRecorder<AnyKeyPath>()
        let t1 = try owner.observe(keyPath: "label") { _, c in paths.add(c.keyPath) }
        let t2 = try owner.observe(\.label) { _, c in paths.add(c.keyPath) }
        owner.label = "x"
        #expect(paths.all.count == 2)
        #expect(paths.all.allSatisfy { $0 == \AtkOwner.label })
        _ = t1.invalidate(); _ = t2.invalidate()
    }

    @Test func exactlyOnceWhileOthersChurnSameKey() throws {
        let owner = AtkOwner()
        let delivered = Atomic<Int>(0)
        let token = try owner.observe(\.label) { _, _ in delivered.add(1, ordering: .relaxed) }
        let done = Atomic<Bool>(false)
        let churn = Thread {
            let observer = AtkObserver()
            let kvo = KVOController(observer: observer)
            while !done.load(ordering: .relaxed) {
                _ = try? kvo.observe(owner, keyPath: "label") { _, _, _ in }
                _ = kvo.unobserve(owner, \.label)
                let t = try? owner.observe(\.label, options: .prior) { _, _ in }
                _ = t?.invalidate()
            }
        }
        churn.start()
        for i in 0..<5000 { owner.label = "\(i)" }
        done.store(true, ordering: .relaxed)
        while !churn.isFinished { usleep(100) }
        #expect(delivered.load(ordering: .relaxed) == 5000)
        _ = token.invalidate()
    }

    @Test func controllerNotRetainingForgetsDeadObjects() throws {
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer, retainsObserved: false)
        do {
            let holder = AtkHolder()
            try kvo.observe(holder, keyPath: "owner.label") { _, _, _ in }
            try kvo.observe(holder, \.owner) { _, _, _ in }
            #expect(kvo.observedObjects.count == 1)
        }
        #expect(kvo.observedObjects.isEmpty)
        #expect(kvo.unobserveAll() == 0)
    }

    @Test func bridgedSubclassOfBridgedBase() {
        let object = AtkBridgedSub()
        let fired = Atomic<Int>(0)
        withObservationTracking { _ = object.count; _ = object.extra } onChange: { fired.add(1, ordering: .relaxed) }
        object.extra = 3
        #expect(fired.load(ordering: .relaxed) == 1)
        withObservationTracking { _ = object.count } onChange: { fired.add(1, ordering: .relaxed) }
        object.count = 3
        #expect(fired.load(ordering: .relaxed) == 2)
    }
}

final class AtkFresh: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var a = 0
    @Observed var b = 0
    @Observed var child: AtkFresh?
    var sum: Int { a + b }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [\AtkFresh.sum: [\AtkFresh.a, \AtkFresh.b]] }
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \AtkFresh.a, "b": \AtkFresh.b] }
}

class AtkBridgedBase: ObservationBridged, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    let observationRegistrar = ObservationRegistrar()
    @Observed var count = 0
}

final class AtkBridgedSub: AtkBridgedBase, @unchecked Sendable {
    @Observed var extra = 0
}

extension HostileUseTests {
    @Test func anOptionalLinkIsReadSetAndObservedByName() throws {
        let owner = AtkOwner()
        let wallet = AtkWallet()
        wallet.balance = 3
        owner.wallet = wallet
        // Chains by name follow the rules of typed chains, `?` links included.
        #expect(try owner.value(forKeyPath: "wallet.balance") as? Double == 3)
        let seen = AttackRecorder<Double?>()
        let token = try owner.observe(keyPath: "wallet.balance", options: .new) { _, c in seen.add(c.newValue as? Double) }
        wallet.balance = 4
        owner.wallet = nil
        #expect(seen.all == [4, nil])
        _ = token.invalidate()
        // The doc comment of setValue(_:forKeyPath:) promises `.notFound` for a nil link.
        owner.wallet = nil
        #expect(throws: KVOError.notFound) { try owner.setValue(1.0, forKeyPath: "wallet.balance") }
    }

    @Test func anOverriddenGetterObservedByNameDeliversWhatItReads() throws {
        let object = AtkOverrider()
        let typed = AttackRecorder<String?>()
        let named = AttackRecorder<String?>()
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

    @Test func anOverriddenGetterObservedThroughTheBaseKeyPathDeliversWhatItReads() throws {
        let base: AtkOverrideBase = AtkOverrider()
        let recorder = AttackRecorder<String?>()
        let token = try base.observe(\.name, options: [.new]) { object, c in
            recorder.add(c.newValue)
            #expect(c.newValue == object.name, "delivered \(c.newValue ?? "nil"), the key path reads \(object.name)")
        }
        base.name = "ada"
        #expect(recorder.all == ["ADA"])
        _ = token.invalidate()
    }

    @Test func dependentKeyByNameNotAssignable() throws {
        let fresh = AtkFresh()
        let table = AtkDependentNamed()
        #expect(throws: KVOError.self) { try table.setValue(3, forKey: "sum") }
        let recorder = AttackRecorder<Any?>()
        let token = try table.observe(keyPath: "sum", options: .new) { _, c in recorder.add(c.newValue) }
        table.a = 2
        #expect(recorder.all.last as? Int == 2)
        _ = token.invalidate()
        _ = fresh
    }

    @Test func hubTokenValidityAfterSenderDeath() throws {
        var sender: AtkOwner? = AtkOwner()
        let token = try NotificationHub.default.addObserver(forName: "atk.note", object: sender) { _ in }
        #expect(token.isValid)
        sender = nil
        #expect(token.isValid == false)
        #expect(token.invalidate() == false)
    }
}

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

final class AtkDependentNamed: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var a = 0
    var sum: Int { a }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [\AtkDependentNamed.sum: [\AtkDependentNamed.a]] }
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \AtkDependentNamed.a, "sum": \AtkDependentNamed.sum] }
}

extension HostileUseTests {
    @Test func hostileDependentTablesRefusedWithoutTrap() throws {
        let odd = AtkOddDependents()
        odd.title = "t"  // plain assignment with a hostile table: no trap
        odd.holder = AtkHolder()
        odd.holder?.owner.label = "x"
        for keyPath in [\AtkOddDependents.foreignSourced, \AtkOddDependents.chainSourced,
                        \AtkOddDependents.bangSourced, \AtkOddDependents.selfSourced] {
            let recorder = AttackRecorder<String?>()
            do {
                let token = try odd.observe(keyPath, options: .new) { o, c in
                    recorder.add(c.newValue)
                    #expect(c.newValue == o[keyPath: keyPath])
                }
                // Accepted: every change of what it reads must arrive.
                let before = recorder.count
                odd.title = "u"
                odd.holder?.owner.label = "y"
                #expect(recorder.count > before, "\(keyPath) accepted but silent")
                _ = token.invalidate()
            } catch {
                // Refused: fine.
            }
        }
    }

    @Test func genericSubclassOverrideDeliversWhatKeyPathReads() throws {
        let object = AtkGenericOverrider<Int>()
        let recorder = AttackRecorder<String?>()
        let token = try object.observe(\.name, options: [.new]) { o, c in
            recorder.add(c.newValue)
            #expect(c.newValue == o.name)
        }
        object.name = "ada"
        #expect(recorder.all == ["ADA"])
        _ = token.invalidate()
    }

    @Test func valuesStreamWithConcurrentDeath() async throws {
        for _ in 0..<100 {
            var owner: AtkOwner? = AtkOwner()
            let stream = try owner!.values(for: \.label)
            let o = owner!
            owner = nil
            let writer = Task.detached { for i in 0..<50 { o.label = "\(i)" } }
            await writer.value
            _ = o
            var count = 0
            let reader = Task { for await _ in stream { count += 1; if count > 1000 { break } }; return count }
            // o is released when this iteration ends; the stream must finish.
            _ = reader
        }
    }
}

final class AtkOddDependents: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var title = ""
    @Observed var holder: AtkHolder?
    var foreignSourced: String { title }
    var chainSourced: String { title + (holder?.owner.label ?? "") }
    var bangSourced: String { title + (holder?.owner.label ?? "") }
    var selfSourced: String { title }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [
            \AtkOddDependents.foreignSourced: [\AtkOwner.label, \AtkOddDependents.title],
            \AtkOddDependents.chainSourced: [\AtkOddDependents.title, \AtkOddDependents.holder?.owner.label],
            \AtkOddDependents.bangSourced: [\AtkOddDependents.title, \AtkOddDependents.holder!.owner.label],
            \AtkOddDependents.selfSourced: [\AtkOddDependents.selfSourced, \AtkOddDependents.title],
            \AtkOwner.label: [\AtkOddDependents.title],
        ]
    }
}

class AtkGenericBase<T>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
}

final class AtkGenericOverrider<T>: AtkGenericBase<T>, @unchecked Sendable {
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

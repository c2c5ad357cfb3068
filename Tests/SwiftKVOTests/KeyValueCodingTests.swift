import Foundation
import Synchronization
import Testing

@testable import SwiftKVO

// Keys by name (SPEC §2 item 19): read, write and observe through the name,
// the same observation as the typed key path's.

private final class Ledger: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var owner = "ada"
    @Observed var total = 0.0
    @Observed var note: String?
    @ObservedArray var entries: [Int] = []
    @Observed var account = Account(name: "main")
    @Observed var spare: Account?
    var summary: String { "\(owner): \(total)" }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Ledger.summary: [\Ledger.owner, \Ledger.total]]
    }
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "owner": \Ledger.owner, "total": \Ledger.total, "note": \Ledger.note,
            "entries": \Ledger.entries, "account": \Ledger.account, "spare": \Ledger.spare,
            "summary": \Ledger.summary,
        ]
    }
}

private final class Shelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var ledger: Ledger?
    static var observableKeyPaths: [String: AnyKeyPath] { ["ledger": \Shelf.ledger] }
}

private class Register: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @ObservedArray var history: [String] = []
    @ObservedSet var tags: Set<String> = []
    class var observableKeyPaths: [String: AnyKeyPath] { ["history": \Register.history, "tags": \Register.tags] }
}

private final class AuditedRegister: Register, @unchecked Sendable {}

@Suite(.needsLayout("its registrations")) struct KeyValueCodingTests {
    @Test func valueForKeyReadsTheProperty() throws {
        let ledger = Ledger()
        ledger.total = 2.5
        #expect(try ledger.value(forKey: "owner") as? String == "ada")
        #expect(try ledger.value(forKey: "total") as? Double == 2.5)
        #expect(try ledger.value(forKey: "note") == nil)
        #expect(try ledger.value(forKey: "summary") as? String == "ada: 2.5")
        #expect(try ledger.value(forKeyPath: "account.name") as? String == "main")
        #expect(try ledger.value(forKeyPath: "account.name", as: String.self) == "main")
    }

    @Test func unknownKeyThrowsAndNamesIt() {
        let ledger = Ledger()
        do {
            _ = try ledger.value(forKeyPath: "account.nickname")
            Issue.record("an unknown key was read")
        } catch {
            #expect(error == .unknownKey)
            #expect(error.detail?.contains("nickname") == true)
        }
        #expect(throws: KVOError.unknownKey) { try ledger.setValue("x", forKey: "nope") }
        #expect(throws: KVOError.unknownKey) { try ledger.observe(keyPath: "nope") { _, _ in } }
    }

    @Test func typedReadOfAnotherTypeThrowsTypeMismatch() {
        let ledger = Ledger()
        #expect(throws: KVOError.typeMismatch) { try ledger.value(forKeyPath: "total", as: String.self) }
    }

    @Test func setValueNotifiesExactlyAsAnAssignment() throws {
        let ledger = Ledger()
        let log = Log<String>()
        let token = try ledger.observe(\.owner, options: [.old, .new, .prior]) { _, change in
            log.append("\(change.isPrior ? "prior " : "")\(change.oldValue ?? "-")→\(change.newValue ?? "-")")
        }
        try ledger.setValue("grace", forKey: "owner")
        ledger.owner = "linus"
        #expect(log.values == ["prior ada→-", "ada→grace", "prior grace→-", "grace→linus"])
        token.invalidate()
    }

    @Test func setValueOfTheWrongTypeThrowsAndChangesNothing() throws {
        let ledger = Ledger()
        let calls = Counter()
        let token = try ledger.observe(\.total, options: [.prior, .new]) { _, _ in calls.increment() }
        #expect(throws: KVOError.typeMismatch) { try ledger.setValue("ten", forKey: "total") }
        #expect(throws: KVOError.typeMismatch) { try ledger.setValue(nil, forKey: "total") }
        #expect(ledger.total == 0)
        #expect(calls.count == 0)
        token.invalidate()
    }

    @Test func setValueNilClearsAnOptionalKey() throws {
        let ledger = Ledger()
        ledger.note = "memo"
        try ledger.setValue(nil, forKey: "note")
        #expect(ledger.note == nil)
        try ledger.setValue("again", forKey: "note")
        #expect(ledger.note == "again")
    }

    @Test func dependentKeyCannotBeAssignedByName() {
        let ledger = Ledger()
        #expect(throws: KVOError.unsupportedKeyPath) { try ledger.setValue("x", forKey: "summary") }
    }

    @Test func setValueForADottedKeyPathAssignsTheLeaf() throws {
        let ledger = Ledger()
        try ledger.setValue("savings", forKeyPath: "account.name")
        #expect(ledger.account.name == "savings")
    }

    @Test func observationByNameIsTheTypedObservationInRegistrationOrder() throws {
        let ledger = Ledger()
        let log = Log<String>()
        let typed = try ledger.observe(\.owner, options: .new) { _, change in
            log.append("typed \(change.newValue ?? "-")")
        }
        let named = try ledger.observe(keyPath: "owner", options: [.old, .new]) { _, change in
            log.append("named \(change.oldValue as? String ?? "-")→\(change.newValue as? String ?? "-")")
            #expect(change.keyPath == \Ledger.owner)
        }
        ledger.owner = "grace"
        #expect(log.values == ["typed grace", "named ada→grace"])
        named.invalidate()
        ledger.owner = "linus"
        #expect(log.values.last == "typed linus")
        typed.invalidate()
    }

    @Test func chainByNameFollowsReplacementOfTheIntermediate() throws {
        let ledger = Ledger()
        let log = Log<String>()
        let token = try ledger.observe(keyPath: "account.name", options: .new) { _, change in
            log.append(change.newValue as? String ?? "-")
        }
        ledger.account.name = "a"
        ledger.account = Account(name: "b")
        ledger.account.name = "c"
        #expect(log.values == ["a", "b", "c"])
        token.invalidate()
    }

    @Test func dependentKeyIsObservedByName() throws {
        let ledger = Ledger()
        let log = Log<String>()
        let token = try ledger.observe(keyPath: "summary", options: .new) { _, change in
            log.append(change.newValue as? String ?? "-")
        }
        ledger.total = 1
        #expect(log.values == ["ada: 1.0"])
        token.invalidate()
    }

    @Test func controllerDeduplicatesAcrossTheTwoSpellings() throws {
        let ledger = Ledger()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try kvo.observe(ledger, \.owner, options: .new) { _, _, change in log.append(change.newValue ?? "-") })
        #expect(try kvo.observe(ledger, keyPath: "owner", options: .new) { _, _, _ in log.append("twice") } == false)
        ledger.owner = "grace"
        #expect(log.values == ["grace"])
        #expect(kvo.unobserve(ledger, keyPath: "owner"))
        #expect(kvo.unobserve(ledger, \.owner) == false)
        ledger.owner = "linus"
        #expect(log.values == ["grace"])
        withExtendedLifetime(observer) {}
    }

    @Test func mutableArrayValueAnnouncesInsertionsWithIndexes() throws {
        let ledger = Ledger()
        let log = Log<String>()
        let token = try ledger.observe(keyPath: "entries", options: .new) { _, change in
            log.append("\(change.kind) \(change.indexes)")
        }
        let entries = try ledger.mutableArrayValue(forKey: "entries", of: Int.self)
        entries.append(7)
        _ = entries.insert(5, at: 0)
        _ = entries.remove(at: 1)
        #expect(ledger.entries == [5])
        #expect(log.values == ["insertion [0]", "insertion [0]", "removal [1]"])
        #expect(throws: KVOError.typeMismatch) { try ledger.mutableArrayValue(forKey: "entries", of: String.self) }
        token.invalidate()
    }

    @Test func optionalLinkByNameIsReadAndSetThrough() throws {
        let ledger = Ledger()
        #expect(try ledger.value(forKeyPath: "spare.name") == nil)
        #expect(throws: KVOError.notFound) { try ledger.setValue("x", forKeyPath: "spare.name") }
        ledger.spare = Account(name: "reserve")
        #expect(try ledger.value(forKeyPath: "spare.name") as? String == "reserve")
        try ledger.setValue("rainy day", forKeyPath: "spare.name")
        #expect(ledger.spare?.name == "rainy day")
    }

    @Test func optionalLinkByNameIsObservedAsTheTypedOptionalChain() throws {
        for startsNil in [true, false] {
            let ledger = Ledger()
            if !startsNil { ledger.spare = Account(name: "first") }
            let typed = Log<String>()
            let named = Log<String>()
            let options: ObservingOptions = [.initial, .old, .new, .prior]
            // The values by name are the typed values, as `Any`, optionals
            // unwrapped (printed, not cast, to compare them).
            let t1 = try ledger.observe(\.spare?.name, options: options) { _, change in
                let flat = change.flattened()
                typed.append("\(flat.isPrior) \(String(reflecting: flat.oldValue))→\(String(reflecting: flat.newValue))")
            }
            let t2 = try ledger.observe(keyPath: "spare.name", options: options) { _, change in
                named.append("\(change.isPrior) \(String(reflecting: change.oldValue))→\(String(reflecting: change.newValue))")
            }
            let reserve = Account(name: "reserve")
            ledger.spare = reserve
            reserve.name = "rainy day"
            try ledger.setValue("sunny", forKeyPath: "spare.name")
            ledger.spare = nil
            reserve.name = "forgotten"  // no longer on the path
            ledger.spare = Account(name: "back")
            #expect(typed.values.count == 11)
            #expect(named.values == typed.values, "named \(named.values) typed \(typed.values)")
            t1.invalidate()
            t2.invalidate()
            ledger.spare?.name = "after"
            #expect(named.values == typed.values)
        }
    }

    @Test func optionalLinkByNameIsOneControllerEntryWithTheLiteral() throws {
        let ledger = Ledger()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try kvo.observe(ledger, \.spare?.name, options: .new) { _, _, change in log.append(change.newValue.map { $0 ?? "nil" } ?? "-") })
        #expect(try kvo.observe(ledger, keyPath: "spare.name", options: .new) { _, _, _ in log.append("twice") } == false)
        ledger.spare = Account(name: "reserve")
        #expect(log.values == ["reserve"])
        #expect(kvo.unobserve(ledger, keyPath: "spare.name"))
        #expect(kvo.unobserve(ledger, \.spare?.name) == false)
        ledger.spare?.name = "gone"
        #expect(log.values == ["reserve"])
        #expect(try kvo.observe(ledger, keyPath: "spare.name") { _, _, _ in })
        #expect(kvo.description.contains("spare?.name"), "\(kvo.description)")
        withExtendedLifetime(observer) {}
    }

    @Test func optionalLinksByNameNestAndUnwrapAnOptionalLeaf() throws {
        let shelf = Shelf()
        let typed = Log<String>()
        let named = Log<String>()
        // As typed: `\Shelf.ledger?.note` is a `String?` (the chain adds no
        // level), and so is `\Shelf.ledger?.spare?.name`; by name, unwrapped.
        let tokens = [
            try shelf.observe(\.ledger?.note, options: .new) { _, c in typed.append("note \(String(reflecting: c.flattened().newValue))") },
            try shelf.observe(keyPath: "ledger.note", options: .new) { _, c in named.append("note \(String(reflecting: c.newValue))") },
            try shelf.observe(\.ledger?.spare?.name, options: .new) { _, c in typed.append("name \(String(reflecting: c.flattened().newValue))") },
            try shelf.observe(keyPath: "ledger.spare.name", options: .new) { _, c in named.append("name \(String(reflecting: c.newValue))") },
        ]
        let ledger = Ledger()
        shelf.ledger = ledger
        ledger.note = "memo"
        ledger.note = nil
        ledger.spare = Account(name: "reserve")
        ledger.spare?.name = "rainy day"
        shelf.ledger = nil
        #expect(typed.values.count == 8)
        #expect(named.values == typed.values)
        #expect(named.values.contains("name Optional(\"rainy day\")"), "\(named.values)")
        for token in tokens { token.invalidate() }
    }

    @Test func optionalLinkByNameRefusesWhatTheTypedChainRefuses() {
        let shelf = Shelf()
        #expect(throws: KVOError.unknownKey) { try shelf.observe(keyPath: "ledger.nope") { _, _ in } }
        #expect(throws: KVOError.unknownKey) { try shelf.observe(keyPath: "ledger.") { _, _ in } }
        #expect(throws: KVOError.unknownKey) { try shelf.observe(keyPath: "ledger.note.count") { _, _ in } }
    }

    @Test func mutableViewsByNameWorkThroughABaseTypedReference() throws {
        let register: Register = AuditedRegister()
        try register.mutableArrayValue(forKey: "history", of: String.self).append("opened")
        try register.mutableSetValue(forKey: "tags", of: String.self).insert("audit")
        #expect(register.history == ["opened"])
        #expect(register.tags == ["audit"])
    }

    @Test func kvcUnknownAndMalformedNamesThrowAndChangeNothing() throws {
        let owner = AtkOwner()
        owner.label = "keep"
        let recorder = Recorder<Int>()
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

    @Test func kvcOnSubclassInstanceOfBaseTable() throws {
        let sub = AtkSub()
        try sub.setValue("n", forKey: "name")
        #expect(sub.name == "n")
        let recorder = Recorder<Any?>()
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

    @Test func kvcByNameAndTypedAreOneObservationInController() throws {
        let owner = AtkOwner()
        let observer = AtkObserver()
        let kvo = KVOController(observer: observer)
        let recorder = Recorder<String>()
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

    @Test func byNameChangeCarriesTypedKeyPath() throws {
        let owner = AtkOwner()
        let paths = Recorder<AnyKeyPath>()
        let t1 = try owner.observe(keyPath: "label") { _, c in paths.add(c.keyPath) }
        let t2 = try owner.observe(\.label) { _, c in paths.add(c.keyPath) }
        owner.label = "x"
        #expect(paths.all.count == 2)
        #expect(paths.all.allSatisfy { $0 == \AtkOwner.label })
        _ = t1.invalidate(); _ = t2.invalidate()
    }

    @Test func kvcChainReplacementOfIntermediateByName() throws {
        let holder = AtkHolder()
        let recorder = Recorder<(Any?, Any?)>()
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

    @Test func dependentKeyByNameNotAssignable() throws {
        let fresh = AtkFresh()
        let table = AtkDependentNamed()
        #expect(throws: KVOError.self) { try table.setValue(3, forKey: "sum") }
        let recorder = Recorder<Any?>()
        let token = try table.observe(keyPath: "sum", options: .new) { _, c in recorder.add(c.newValue) }
        table.a = 2
        #expect(recorder.all.last as? Int == 2)
        _ = token.invalidate()
        _ = fresh
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
}

final class AtkDependentNamed: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var a = 0
    var sum: Int { a }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [\AtkDependentNamed.sum: [\AtkDependentNamed.a]] }
    static var observableKeyPaths: [String: AnyKeyPath] { ["a": \AtkDependentNamed.a, "sum": \AtkDependentNamed.sum] }
}

/// A dependent key with a setter, and a link to an object of its own class.
private final class KvcSettableDependent: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var cents = 0
    @Observed var child: KvcSettableDependent?
    var euros: Int {
        get { cents / 100 }
        set { cents = newValue * 100 }
    }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\KvcSettableDependent.euros: [\KvcSettableDependent.cents]]
    }
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["cents": \KvcSettableDependent.cents, "child": \KvcSettableDependent.child, "euros": \KvcSettableDependent.euros]
    }
}

/// An optional link, and an optional property.
private final class KvcOrder: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var customer: KvcCustomer?
    @Observed var coupon: String?
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["customer": \KvcOrder.customer, "coupon": \KvcOrder.coupon]
    }
}

private final class KvcCustomer: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name: String
    init(name: String) { self.name = name }
    static var observableKeyPaths: [String: AnyKeyPath] { ["name": \KvcCustomer.name] }
}

@Suite(.needsLayout("its registrations")) struct KeyValueCodingRulesTests {
    @Test func setValueForKeyRefusesADependentKeyEvenOneWithASetter() throws {
        let object = KvcSettableDependent()
        let log = Log<String>()
        let token = try object.observe(keyPath: "cents", options: .new) { _, change in log.append("\(change.newValue ?? "-")") }
        let error = #expect(throws: KVOError.unsupportedKeyPath) { try object.setValue(3, forKey: "euros") }
        #expect(error?.detail?.contains("`euros` is a dependent key") == true, "\(String(describing: error))")
        object.child = KvcSettableDependent()
        #expect(throws: KVOError.unsupportedKeyPath) { try object.setValue(3, forKeyPath: "child.euros") }
        #expect(object.cents == 0 && object.child?.cents == 0)
        #expect(log.values.isEmpty, "a refused assignment notified: \(log.values)")
        // The setter stays the code's to call.
        object.euros = 2
        #expect(log.values == ["200"])
        token.invalidate()
    }

    @Test func forKeyMeansOneKeyAndADottedKeyPointsToForKeyPath() throws {
        let object = KvcSettableDependent()
        object.child = KvcSettableDependent()
        let set = #expect(throws: KVOError.unknownKey) { try object.setValue(5, forKey: "child.cents") }
        #expect(set?.detail?.contains("setValue(_:forKeyPath:)") == true, "\(String(describing: set))")
        let read = #expect(throws: KVOError.unknownKey) { _ = try object.value(forKey: "child.cents") }
        #expect(read?.detail?.contains("value(forKeyPath:)") == true, "\(String(describing: read))")
        #expect(object.child?.cents == 0)
        #expect(throws: KVOError.unknownKey) { _ = try object.mutableArrayValue(forKey: "child.cents", of: Int.self) }
        #expect(throws: KVOError.unknownKey) { _ = try object.mutableSetValue(forKey: "child.cents", of: Int.self) }
        try object.setValue(5, forKeyPath: "child.cents")
        #expect(try object.value(forKeyPath: "child.cents") as? Int == 5)
    }

    @Test func byNameObservationAndValueForKeyPathAgreeOnOptionals() throws {
        let order = KvcOrder()
        let observed = Log<String>()
        let read = Log<String>()
        @Sendable func record(_ value: Any?, in log: Log<String>) { log.append(String(reflecting: value)) }
        let tokens = [
            try order.observe(keyPath: "customer.name", options: [.initial, .new]) { order, change in
                record(change.newValue, in: observed)
                record(try? order.value(forKeyPath: "customer.name"), in: read)
            },
            try order.observe(keyPath: "coupon", options: [.initial, .new]) { order, change in
                record(change.newValue, in: observed)
                record(try? order.value(forKeyPath: "coupon"), in: read)
            },
        ]
        order.customer = KvcCustomer(name: "Grace")
        order.coupon = "SPRING"
        order.coupon = nil
        order.customer = nil
        // One rule: values by name are `Any`, optionals unwrapped at every
        // level, `nil` for `nil`, as value(forKeyPath:) reads them.
        #expect(observed.values == ["nil", "nil", "Optional(\"Grace\")", "Optional(\"SPRING\")", "nil", "nil"])
        #expect(observed.values == read.values)
        for token in tokens { token.invalidate() }
    }

    @Test func aControllerByNameDeliversTheValuesValueForKeyPathReads() throws {
        let order = KvcOrder()
        let observer = NSObject()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try kvo.observe(order, keyPath: "coupon", options: .new) { _, _, change in log.append(String(reflecting: change.newValue)) })
        #expect(try kvo.observe(order, keyPath: "customer.name", options: .new) { _, _, change in log.append(String(reflecting: change.newValue)) })
        order.coupon = "A"
        order.coupon = nil
        order.customer = KvcCustomer(name: "Ada")
        #expect(log.values == ["Optional(\"A\")", "nil", "Optional(\"Ada\")"])
        withExtendedLifetime(observer) {}
    }
}

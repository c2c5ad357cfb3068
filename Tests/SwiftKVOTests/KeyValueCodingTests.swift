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

extension Account {
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "name": \Account.name, "balance": \Account.balance, "transactions": \Account.transactions,
            "manualCount": \Account.manualCount,
        ]
    }
}

@Suite struct KeyValueCodingTests {
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
            // The values by name are the typed values, as `Any` (levels of
            // optionality kept: printed, not cast, to compare them).
            let t1 = try ledger.observe(\.spare?.name, options: options) { _, change in
                typed.append("\(change.isPrior) \(String(reflecting: change.oldValue))→\(String(reflecting: change.newValue))")
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

    @Test func optionalLinksByNameNestAndKeepAnOptionalLeafOneLevelDeep() throws {
        let shelf = Shelf()
        let typed = Log<String>()
        let named = Log<String>()
        // As typed: `\Shelf.ledger?.note` is a `String?` (the chain adds no
        // level), and so is `\Shelf.ledger?.spare?.name`.
        let tokens = [
            try shelf.observe(\.ledger?.note, options: .new) { _, c in typed.append("note \(String(reflecting: c.newValue))") },
            try shelf.observe(keyPath: "ledger.note", options: .new) { _, c in named.append("note \(String(reflecting: c.newValue))") },
            try shelf.observe(\.ledger?.spare?.name, options: .new) { _, c in typed.append("name \(String(reflecting: c.newValue))") },
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
        #expect(named.values.contains("name Optional(Optional(\"rainy day\"))"), "\(named.values)")
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
}

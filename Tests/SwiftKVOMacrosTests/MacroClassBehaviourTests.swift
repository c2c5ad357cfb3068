#if Macros
import Synchronization
import SwiftKVOMacros
import Testing

// A class declared with `@KeyValueObservable` against its hand-written twin: every scenario
// runs on both, and their logs must be equal (and what SwiftKVO promises).

struct Transaction: Equatable, Sendable, CustomStringConvertible {
    var amount: Double
    var description: String { "T(\(amount))" }
}

@KeyValueObservable
final class MacroAccount: @unchecked Sendable {
    var name = ""
    var balance = 0.0
    var transactions: [Transaction] = []
    @Observed(notifiesAutomatically: false) var manualCount = 0
    @KVOIgnored var cache: [String: Int] = [:]
    @DependsOn(\.name, \.balance) var summary: String { "\(name): \(balance)" }
    @DependsOn(\.summary) var banner: String { "[\(summary)]" }

    func setManualCount(_ value: Int) {
        guard value != manualCount else { return }
        willChangeValue(for: \.manualCount)
        manualCount = value
        didChangeValue(for: \.manualCount)
    }
}

/// A computed property of the same type as an observed one, whose getter
/// traps on an empty shelf.
@KeyValueObservable
final class MacroShelf: @unchecked Sendable {
    var items: [String] = []
    var title = ""
    var firstItem: String { items[0] }
}

final class HandAccount: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    @Observed var balance = 0.0
    @ObservedArray var transactions: [Transaction] = []
    @Observed(notifiesAutomatically: false) var manualCount = 0
    var cache: [String: Int] = [:]
    var summary: String { "\(name): \(balance)" }
    var banner: String { "[\(summary)]" }

    func setManualCount(_ value: Int) {
        guard value != manualCount else { return }
        willChangeValue(for: \.manualCount)
        manualCount = value
        didChangeValue(for: \.manualCount)
    }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\HandAccount.summary: [\HandAccount.name, \HandAccount.balance], \HandAccount.banner: [\HandAccount.summary]]
    }
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "name": \HandAccount.name, "balance": \HandAccount.balance, "transactions": \HandAccount.transactions,
            "manualCount": \HandAccount.manualCount, "summary": \HandAccount.summary, "banner": \HandAccount.banner,
        ]
    }
}

@KeyValueObservable
final class MacroPortfolio: @unchecked Sendable {
    var primary = MacroAccount()
    var backup: MacroAccount? = nil
}

final class HandPortfolio: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var primary = HandAccount()
    @Observed var backup: HandAccount? = nil
    static var observableKeyPaths: [String: AnyKeyPath] { ["primary": \HandPortfolio.primary, "backup": \HandPortfolio.backup] }
}

/// Not final: the tables are `class var`, which a subclass written by hand overrides.
@KeyValueObservable
class MacroBase: @unchecked Sendable {
    var name = ""
}

final class MacroDerived: MacroBase, @unchecked Sendable {
    @Observed var rate = 0.0
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["rate": \MacroDerived.rate]) { _, new in new }
    }
}

/// A scenario's view of one of the twins: how to make it, and its key paths.
struct Twin<Account: KeyValueObservable & Sendable, Portfolio: KeyValueObservable & Sendable> {
    let makeAccount: () -> Account
    let makePortfolio: () -> Portfolio
    let name: ReferenceWritableKeyPath<Account, String>
    let balance: ReferenceWritableKeyPath<Account, Double>
    let transactions: ReferenceWritableKeyPath<Account, [Transaction]>
    let manualCount: KeyPath<Account, Int>
    let setManualCount: (Account, Int) -> Void
    let cache: KeyPath<Account, [String: Int]>
    let summary: KeyPath<Account, String>
    let banner: KeyPath<Account, String>
    let primary: ReferenceWritableKeyPath<Portfolio, Account>
    let backup: ReferenceWritableKeyPath<Portfolio, Account?>
    let primaryName: KeyPath<Portfolio, String>
    let backupName: KeyPath<Portfolio, String?>
}

var macroTwin: Twin<MacroAccount, MacroPortfolio> {
    Twin(
    makeAccount: MacroAccount.init, makePortfolio: MacroPortfolio.init,
    name: \MacroAccount.name, balance: \.balance, transactions: \.transactions, manualCount: \.manualCount,
    setManualCount: { $0.setManualCount($1) }, cache: \.cache, summary: \.summary, banner: \.banner,
    primary: \MacroPortfolio.primary, backup: \.backup, primaryName: \.primary.name, backupName: \.backup?.name)
}

var handTwin: Twin<HandAccount, HandPortfolio> {
    Twin(
    makeAccount: HandAccount.init, makePortfolio: HandPortfolio.init,
    name: \HandAccount.name, balance: \.balance, transactions: \.transactions, manualCount: \.manualCount,
    setManualCount: { $0.setManualCount($1) }, cache: \.cache, summary: \.summary, banner: \.banner,
    primary: \HandPortfolio.primary, backup: \.backup, primaryName: \.primary.name, backupName: \.backup?.name)
}

/// What the handlers saw, in order.
final class Log: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

func describe<Value>(_ tag: String, _ change: ObservedChange<Value>) -> String {
    var line = "\(tag) \(change.kind)"
    if let old = change.oldValue { line += " old=\(old)" }
    if let new = change.newValue { line += " new=\(new)" }
    if !change.indexes.isEmpty { line += " at=\(change.indexes)" }
    if change.isPrior { line += " prior" }
    if change.isInitial { line += " initial" }
    return line
}

/// Runs `scenario` on both twins; their logs must be equal. Returns the macro class's log.
func bothTwins(
    _ scenario: (Twin<MacroAccount, MacroPortfolio>) throws -> [String],
    _ twinScenario: (Twin<HandAccount, HandPortfolio>) throws -> [String],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> [String] {
    let byMacro = try scenario(macroTwin)
    let byHand = try twinScenario(handTwin)
    #expect(byMacro == byHand, sourceLocation: sourceLocation)
    return byMacro
}

enum Scenarios {
    static func options<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let account = twin.makeAccount()
        account[keyPath: twin.name] = "a"
        let token = try account.observe(twin.name, options: [.initial, .old, .new, .prior]) { _, change in
            log.add(describe("name", change))
        }
        account[keyPath: twin.name] = "b"
        account[keyPath: twin.name] = "b"  // equal values notify too
        token.invalidate()
        account[keyPath: twin.name] = "c"
        return log.all
    }

    static func ordering<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let account = twin.makeAccount()
        let tokens = try (1...3).map { index in
            try account.observe(twin.balance, options: .new) { _, change in log.add("\(index): \(change.newValue!)") }
        }
        account[keyPath: twin.balance] = 1
        tokens[1].invalidate()
        account[keyPath: twin.balance] = 2
        return log.all
    }

    static func collections<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let account = twin.makeAccount()
        let token = try account.observe(twin.transactions, options: [.old, .new]) { _, change in
            log.add(describe("transactions", change))
        }
        let mutator = account.mutableArray(twin.transactions)
        mutator.append(Transaction(amount: 1))
        _ = mutator.insert(Transaction(amount: 2), at: 0)
        _ = mutator.replace(at: 1, with: Transaction(amount: 3))
        _ = mutator.remove(at: 0)
        account[keyPath: twin.transactions] = []
        log.add("left \(account[keyPath: twin.transactions])")
        _ = token
        return log.all
    }

    static func dependents<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let account = twin.makeAccount()
        let tokens = [
            try account.observe(twin.summary, options: [.old, .new]) { _, change in log.add(describe("summary", change)) },
            try account.observe(twin.banner, options: [.new]) { _, change in log.add(describe("banner", change)) },
        ]
        account[keyPath: twin.name] = "Ada"
        account[keyPath: twin.balance] = 2
        _ = tokens
        return log.all
    }

    static func chains<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let portfolio = twin.makePortfolio()
        let tokens = [
            try portfolio.observe(twin.primaryName, options: [.old, .new]) { _, change in
                log.add(describe("primary.name", change))
            },
            try portfolio.observe(twin.backupName, options: [.new]) { _, change in
                log.add(describe("backup?.name", change))
            },
        ]
        let first = portfolio[keyPath: twin.primary]
        first[keyPath: twin.name] = "one"
        let second = twin.makeAccount()
        second[keyPath: twin.name] = "two"
        portfolio[keyPath: twin.primary] = second  // moves the chain to the new account
        first[keyPath: twin.name] = "unseen"
        second[keyPath: twin.name] = "three"
        portfolio[keyPath: twin.backup] = first
        first[keyPath: twin.name] = "four"
        portfolio[keyPath: twin.backup] = nil
        first[keyPath: twin.name] = "unseen again"
        _ = tokens
        return log.all
    }

    static func manualNotification<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let account = twin.makeAccount()
        let token = try account.observe(twin.manualCount, options: [.old, .new]) { _, change in
            log.add(describe("manualCount", change))
        }
        twin.setManualCount(account, 1)
        twin.setManualCount(account, 1)  // unchanged: this class announces nothing
        twin.setManualCount(account, 2)
        _ = token
        return log.all
    }

    static func ignoredPropertyIsRefused<A, P>(_ twin: Twin<A, P>) -> [String] {
        let account = twin.makeAccount()
        do {
            _ = try account.observe(twin.cache) { _, _ in }
            return ["observed"]
        } catch {
            return [error == .unsupportedKeyPath ? "unsupportedKeyPath" : "\(error)"]
        }
    }

    static func objectDeathEndsObservations<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        var tokens: [ObservationToken] = []
        for _ in 0..<20 {
            let account = twin.makeAccount()
            tokens.append(try account.observe(twin.name) { _, _ in log.add("called") })
            account[keyPath: twin.name] = "seen"
        }
        // Every observed account died; new ones, likely at reused addresses, are silent.
        for _ in 0..<20 {
            let account = twin.makeAccount()
            account[keyPath: twin.name] = "unseen"
        }
        _ = tokens
        return ["\(log.all.count) calls"]
    }

    /// The observer of a `KVOController`.
    final class Label: @unchecked Sendable {
        var lines: [String] = []
    }

    static func controller<A, P>(_ twin: Twin<A, P>) throws -> [String] {
        let log = Log()
        let account = twin.makeAccount()
        var label: Label? = Label()
        var kvo: KVOController<Label>? = KVOController(observer: label!)
        let first = try kvo!.observe(account, twin.name, options: [.initial, .new]) { _, _, change in
            log.add(describe("name", change))
        }
        let duplicate = try kvo!.observe(account, twin.name, options: [.new]) { _, _, _ in log.add("duplicate") }
        try kvo!.observe(account, twin.balance, options: [.new]) { label, _, change in
            label.lines.append("balance \(change.newValue!)")
            log.add(describe("balance", change))
        }
        log.add("registered \(first) \(duplicate)")
        account[keyPath: twin.name] = "x"
        account[keyPath: twin.balance] = 3
        log.add("unobserved \(kvo!.unobserve(account, twin.name))")
        account[keyPath: twin.name] = "y"
        log.add("label \(label!.lines)")
        kvo = nil  // the controller's death ends its observations
        label = nil
        account[keyPath: twin.balance] = 4
        return log.all
    }
}

@Suite struct MacroClassBehaviourTests {
    @Test func optionsAreDeliveredAsForTheHandWrittenClass() throws {
        let log = try bothTwins(Scenarios.options, Scenarios.options)
        #expect(log == [
            "name setting new=a initial",
            "name setting old=a prior",
            "name setting old=a new=b",
            "name setting old=b prior",
            "name setting old=b new=b",
        ])
    }

    @Test func observersAreCalledInRegistrationOrder() throws {
        let log = try bothTwins(Scenarios.ordering, Scenarios.ordering)
        #expect(log == ["1: 1.0", "2: 1.0", "3: 1.0", "1: 2.0", "3: 2.0"])
    }

    @Test func arrayMutationsNotifyInsertionRemovalAndReplacement() throws {
        let log = try bothTwins(Scenarios.collections, Scenarios.collections)
        #expect(log == [
            "transactions insertion new=[T(1.0)] at=[0]",
            "transactions insertion new=[T(2.0)] at=[0]",
            "transactions replacement old=[T(1.0)] new=[T(3.0)] at=[1]",
            "transactions removal old=[T(2.0)] at=[0]",
            "transactions setting old=[T(3.0)] new=[]",
            "left []",
        ])
    }

    @Test func dependsOnNotifiesTheComputedPropertyAndItsDependents() throws {
        let log = try bothTwins(Scenarios.dependents, Scenarios.dependents)
        #expect(log == [
            "summary setting old=: 0.0 new=Ada: 0.0",
            "banner setting new=[Ada: 0.0]",
            "summary setting old=Ada: 0.0 new=Ada: 2.0",
            "banner setting new=[Ada: 2.0]",
        ])
    }

    @Test func chainsFollowReplacedLinksAndOptionalLinks() throws {
        if LayoutSelfCheck.current.isForced {
            // Without the layout an optional chain is refused (make unit-fallback).
            let error = #expect(throws: KVOError.unsupportedKeyPath) {
                try bothTwins(Scenarios.chains, Scenarios.chains)
            }
            #expect(error?.detail?.contains("did not pass SwiftKVO's self-check") == true)
            return
        }
        let log = try bothTwins(Scenarios.chains, Scenarios.chains)
        #expect(log == [
            "primary.name setting old= new=one",
            "primary.name setting old=one new=two",
            "primary.name setting old=two new=three",
            "backup?.name setting new=Optional(\"unseen\")",
            "backup?.name setting new=Optional(\"four\")",
            "backup?.name setting new=nil",
        ])
    }

    @Test func manualNotificationIsKeptWhereWrittenByHand() throws {
        let log = try bothTwins(Scenarios.manualNotification, Scenarios.manualNotification)
        #expect(log == ["manualCount setting old=0 new=1", "manualCount setting old=1 new=2"])
    }

    @Test func aComputedPropertyIsRefusedFromTheTableWithoutRunningItsGetter() throws {
        let shelf = MacroShelf()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try shelf.observe(\.firstItem) { _, _ in } }
        #expect(throws: KVOError.unknownKey) { _ = try shelf.observe(keyPath: "firstItem") { _, _ in } }
    }

    @Test func anIgnoredPropertyIsNotObservable() throws {
        let log = try bothTwins(Scenarios.ignoredPropertyIsRefused, Scenarios.ignoredPropertyIsRefused)
        #expect(log == ["unsupportedKeyPath"])
    }

    @Test func objectDeathEndsItsObservations() throws {
        let log = try bothTwins(Scenarios.objectDeathEndsObservations, Scenarios.objectDeathEndsObservations)
        #expect(log == ["20 calls"])  // each account's own change while it lived, none after
    }

    @Test func kvoControllerObservesTheMacroClassAsTheHandWrittenOne() throws {
        let log = try bothTwins(Scenarios.controller, Scenarios.controller)
        #expect(log == [
            "name setting new= initial",
            "registered true false",
            "name setting new=x",
            "balance setting new=3.0",
            "unobserved true",
            "label [\"balance 3.0\"]",
        ])
    }

    @Test func valuesEndWhenTheMacroObjectDies() async throws {
        var account: MacroAccount? = MacroAccount()
        let stream = try account!.values(for: \.name, bufferingPolicy: .unbounded)
        account!.name = "b"
        account = nil
        var received: [String] = []
        for await name in stream { received.append(name) }
        #expect(received == ["", "b"])
    }

    @Test func theNameTableMatchesTheHandWrittenOne() {
        #expect(Set(MacroAccount.observableKeyPaths.keys) == Set(HandAccount.observableKeyPaths.keys))
        #expect(MacroAccount.observableKeyPaths["name"] == \MacroAccount.name)
        #expect(MacroAccount.observableKeyPaths["transactions"] == \MacroAccount.transactions)
        #expect(MacroAccount.observableKeyPaths["banner"] == \MacroAccount.banner)
        #expect(MacroAccount.observableKeyPaths["cache"] == nil)
        #expect(MacroAccount.dependentKeyPaths[\MacroAccount.summary] == [\MacroAccount.name, \MacroAccount.balance])
        #expect(MacroPortfolio.observableKeyPaths.count == 2)
    }

    @Test func aSubclassOfANonFinalMacroClassExtendsItsTable() throws {
        let log = Log()
        let derived = MacroDerived()
        let tokens = [
            try derived.observe(\.name, options: .new) { _, change in log.add(describe("name", change)) },
            try derived.observe(\.rate, options: .new) { _, change in log.add(describe("rate", change)) },
        ]
        derived.name = "savings"
        derived.rate = 0.5
        _ = tokens
        #expect(log.all == ["name setting new=savings", "rate setting new=0.5"])
        #expect(Set(MacroDerived.observableKeyPaths.keys) == ["name", "rate"])
        #expect(MacroBase.observableKeyPaths.keys.sorted() == ["name"])
    }

    @MainActor @Test func aMainActorClassIsObservedOnItsActorTypedAndByName() throws {
        let log = Log()
        let badge = MacroBadge()
        let tokens = [
            try badge.observe(\.count, options: .new) { _, change in log.add("count \(change.newValue!)") },
            try badge.observe(keyPath: "label", options: .new) { _, change in log.add("label \(change.newValue!)") },
            try badge.observe(\.title, options: .new) { _, change in log.add("title \(change.newValue!)") },
        ]
        badge.count = 2
        badge.title = "t"
        _ = tokens
        #expect(log.all == ["count 2", "label #2", "title t"])
        #expect(try badge.value(forKey: "count") as? Int == 2)
    }

    @Test func aMainActorClassTableIsReadFromAnyThread() async {
        let names = await Task.detached { MacroBadge.observableKeyPaths.keys.sorted() }.value
        #expect(names == ["count", "label", "title"])
        #expect(await Task.detached { MacroBadge.dependentKeyPaths.count }.value == 1)
    }
}

@KeyValueObservable @MainActor
final class MacroBadge {
    var count = 0
    var title = ""
    @DependsOn(\.count) var label: String { "#\(count)" }
}
#endif

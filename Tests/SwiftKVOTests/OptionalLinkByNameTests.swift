// A dotted name through optional links ("wallet.spare.balance") is the typed optional chain:
// the same values and refusals, one controller entry whatever the spelling, and no name traps.

import Foundation
import Synchronization
import Testing

@testable import SwiftKVO

final class OlWallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var balance = 0
    @Observed var nickname: String?
    @Observed var maybe: Int??
    @Observed var spare: OlWallet?
    /// Computed, not declared: not observable.
    var doubled: Int { balance * 2 }
    /// A dependent key of `balance`.
    var display: String { "#\(balance)" }
    let onDeinit: (@Sendable () -> Void)?

    init(_ balance: Int = 0, onDeinit: (@Sendable () -> Void)? = nil) {
        self.onDeinit = onDeinit
        self.balance = balance
    }

    deinit { onDeinit?() }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [\OlWallet.display: [\OlWallet.balance]] }
    static var observableKeyPaths: [String: AnyKeyPath] {
        [
            "balance": \OlWallet.balance, "nickname": \OlWallet.nickname, "maybe": \OlWallet.maybe,
            "spare": \OlWallet.spare, "doubled": \OlWallet.doubled, "display": \OlWallet.display,
            "søldé💰": \OlWallet.balance,
        ]
    }
}

class OlOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: OlWallet?
    static var observableKeyPaths: [String: AnyKeyPath] { ["wallet": \OlOwner.wallet] }
}

/// A hand-written table with odd entries: an optional chain, the identity.
final class OlOddTable: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: OlWallet?
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["wallet": \OlOddTable.wallet, "spareOfWallet": \OlOddTable.wallet?.spare, "me": \OlOddTable.self]
    }
}

/// A link two optionals deep.
final class OlDoubleOwner: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: OlWallet??
    static var observableKeyPaths: [String: AnyKeyPath] { ["wallet": \OlDoubleOwner.wallet] }
}

final class OlDerived: OlOwner, @unchecked Sendable {}

/// Reads its wallet's spare, where it has one, in place of the wallet.
final class OlOverrider: OlOwner, @unchecked Sendable {
    override var wallet: OlWallet? {
        get { super.wallet?.spare ?? super.wallet }
        set { super.wallet = newValue }
    }
}

final class OlBox<T: Sendable>: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var wallet: OlWallet?
    @Observed var item: T
    init(_ item: T) { self.item = item }
    static var observableKeyPaths: [String: AnyKeyPath] { ["wallet": \OlBox<T>.wallet, "item": \OlBox<T>.item] }
}

/// A change as text, its values as by name: optionals unwrapped, `nil` for `nil`.
private func text<Value>(_ change: ObservedChange<Value>) -> String {
    "\(change.isPrior) \(String(reflecting: change.oldValue.flatMap(flattened)))→\(String(reflecting: change.newValue.flatMap(flattened)))"
}

@Suite(.needsLayout("its registrations")) struct OptionalLinkByNameTests {
    static let all: ObservingOptions = [.initial, .old, .new, .prior]

    @Test func threeOptionalLinksDeepByNameIsTheTypedChain() throws {
        let owner = OlOwner()
        let typed = Log<String>()
        let named = Log<String>()
        let t1 = try owner.observe(\.wallet?.spare?.spare?.balance, options: Self.all) { _, c in typed.append(text(c)) }
        let t2 = try owner.observe(keyPath: "wallet.spare.spare.balance", options: Self.all) { _, c in named.append(text(c)) }
        let a = OlWallet(1), b = OlWallet(2), c = OlWallet(3), d = OlWallet(4)
        owner.wallet = a
        a.spare = b
        b.spare = c
        c.balance = 30
        b.spare = d
        c.balance = 31  // off the path
        a.spare = nil
        d.balance = 40  // off the path
        a.spare = b
        owner.wallet = nil
        owner.wallet = a
        #expect(typed.values.count > 10)
        #expect(named.values == typed.values, "named \(named.values)\ntyped \(typed.values)")
        t1.invalidate()
        t2.invalidate()
        d.balance = 41
        #expect(named.values == typed.values)
        #expect(try owner.value(forKeyPath: "wallet.spare.spare.balance") as? Int == 41)
    }

    @Test func anOptionalOfOptionalLeafByNameIsTheTypedValue() throws {
        let owner = OlOwner()
        let typed = Log<String>()
        let named = Log<String>()
        let t1 = try owner.observe(\.wallet?.maybe, options: Self.all) { _, c in typed.append(text(c)) }
        let t2 = try owner.observe(keyPath: "wallet.maybe", options: Self.all) { _, c in named.append(text(c)) }
        let wallet = OlWallet()
        owner.wallet = wallet
        wallet.maybe = .some(nil)
        wallet.maybe = 3
        wallet.maybe = nil
        wallet.nickname = "x"
        owner.wallet = nil
        #expect(named.values == typed.values, "named \(named.values)\ntyped \(typed.values)")
        #expect(typed.values.count == 11)
        t1.invalidate()
        t2.invalidate()
    }

    @Test func anOptionalLeafByNameDeliversExactlyTheTypedAny() throws {
        // The delivered `Any` holds what the typed chain delivers: a `String?`.
        let owner = OlOwner()
        let typed = Log<String?>()
        let named = Log<Any>()
        let t1 = try owner.observe(\.wallet?.nickname, options: .new) { _, c in typed.append(c.newValue!) }
        let t2 = try owner.observe(keyPath: "wallet.nickname", options: .new) { _, c in named.append(c.newValue as Any) }
        let wallet = OlWallet()
        owner.wallet = wallet
        wallet.nickname = "n"
        owner.wallet = nil
        #expect(typed.values == [nil, "n", nil])
        let unwrapped = named.values.map { ($0 as? String??).map { $0 ?? nil } }
        #expect(unwrapped == [.some(nil), .some("n"), .some(nil)], "\(named.values)")
        t1.invalidate()
        t2.invalidate()
    }

    @Test func aLinkTwoOptionalsDeepReadsTheSameWhetherNilOrNot() throws {
        // Reading goes through both levels (a cast unwraps them); a nil at
        // either level reads nil, and the names past it are still checked.
        let owner = OlDoubleOwner()
        #expect(try owner.value(forKeyPath: "wallet.balance") == nil)
        #expect(throws: KVOError.unknownKey) { _ = try owner.value(forKeyPath: "wallet.nope") }
        owner.wallet = .some(OlWallet(4))
        #expect(try owner.value(forKeyPath: "wallet.balance") as? Int == 4)
        // Observing it by name is refused or is the typed chain; never a trap.
        var typedError: KVOError?
        var namedError: KVOError?
        do { try owner.observe(\.wallet??.balance) { _, _ in }.invalidate() } catch { typedError = error }
        do { try owner.observe(keyPath: "wallet.balance") { _, _ in }.invalidate() } catch { namedError = error }
        #expect(typedError != nil)
        #expect(namedError == typedError, "\(String(describing: namedError?.detail))")
        owner.wallet = .some(nil)
        #expect(try owner.value(forKeyPath: "wallet.balance") == nil)
        #expect(throws: KVOError.notFound) { try owner.setValue(1, forKeyPath: "wallet.balance") }
    }

    @Test func malformedAndOddNamesThrowAndNeverTrap() throws {
        let owner = OlOwner()
        owner.wallet = OlWallet(5)
        let long = Array(repeating: "wallet", count: 5_000).joined(separator: ".")
        let names = [
            "", ".", "..", "wallet.", ".balance", ".wallet.balance", "wallet..balance", "wallet.balance.",
            "wallet.balance.balance", "wallet.nope", "wallet.spare.", "wallet.spare..balance",
            "wallet.spare.nope", "Wallet.balance", "wallet.Balance", "wallet .balance", "wallet.søldé",
            "wallet.\u{0}", long, String(repeating: "w", count: 100_000),
        ]
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        for name in names {
            #expect(throws: KVOError.self, "\(name.prefix(40))") { _ = try owner.observe(keyPath: name) { _, _ in } }
            #expect(throws: KVOError.self, "\(name.prefix(40))") { try kvo.observe(owner, keyPath: name) { _, _, _ in } }
            #expect(kvo.unobserve(owner, keyPath: name) == false)
            #expect(throws: KVOError.self, "\(name.prefix(40))") { try owner.setValue(1, forKeyPath: name) }
            #expect(throws: KVOError.self, "\(name.prefix(40))") { _ = try owner.value(forKeyPath: name) }
        }
        // Past a nil link, an unknown name is unknown all the same: reading
        // and setting throw `unknownKey`, as observing and
        // `value(forKeyPath:as:)` do, not `nil` / `notFound`.
        let empty = OlOwner()
        for name in ["wallet.nope", "wallet.spare.nope", "wallet.spare..balance", "wallet.spare.", "wallet.balance.x"] {
            #expect(throws: KVOError.unknownKey, "\(name)") { _ = try empty.value(forKeyPath: name) }
            #expect(throws: KVOError.unknownKey, "\(name)") { try empty.setValue(1, forKeyPath: name) }
            #expect(throws: KVOError.unknownKey, "\(name)") { _ = try empty.value(forKeyPath: name, as: Int?.self) }
        }
        #expect(try empty.value(forKeyPath: "wallet.spare.balance") == nil)
        #expect(throws: KVOError.notFound) { try empty.setValue(1, forKeyPath: "wallet.spare.balance") }
        // A name that is not ASCII is a name like any other.
        let log = Log<String>()
        let token = try owner.observe(keyPath: "wallet.søldé💰", options: .new) { _, c in log.append(text(c)) }
        owner.wallet?.balance = 6
        #expect(log.values == ["false nil→Optional(6)"])
        #expect(try owner.value(forKeyPath: "wallet.søldé💰") as? Int == 6)
        token.invalidate()
        withExtendedLifetime(observer) {}
    }

    @Test func aNameThroughTooManyOptionalLinksIsRefusedNotAStackOverflow() {
        // Each optional link nested the rest of the path one level deeper:
        // a few hundred of them overflowed a 1 MB thread stack (a crash).
        let limit = KeyValueCoding.maximumOptionalLinks
        for spares in [limit, 400, 3_000] {
            let name = "wallet." + Array(repeating: "spare", count: spares).joined(separator: ".") + ".balance"
            let outcomes = Log<String>()
            runConcurrently(1) { _ in  // 1 MB of stack
                let owner = OlOwner()
                do { _ = try owner.observe(keyPath: name) { _, _ in }; outcomes.append("observed") } catch {
                    outcomes.append((error as? KVOError) == .unsupportedKeyPath ? "refused" : "\(error)")
                }
                do { _ = try owner.value(forKeyPath: name); outcomes.append("read") } catch {
                    outcomes.append((error as? KVOError) == .unsupportedKeyPath ? "refused" : "\(error)")
                }
                owner.wallet = OlWallet()
                do { _ = try owner.value(forKeyPath: name); outcomes.append("read") } catch {
                    outcomes.append((error as? KVOError) == .unsupportedKeyPath ? "refused" : "\(error)")
                }
            }
            // Reading follows the links one by one (and checks the names
            // past a nil one the same way): no limit there.
            #expect(outcomes.values == ["refused", "read", "read"], "\(spares)")
        }
    }

    @Test func aLongChainOfOptionalLinksByName() throws {
        let owner = OlOwner()
        let depth = KeyValueCoding.maximumOptionalLinks - 1
        let name = "wallet." + Array(repeating: "spare", count: depth).joined(separator: ".") + ".balance"
        let log = Log<String>()
        let token = try owner.observe(keyPath: name, options: .new) { _, c in log.append("\(String(describing: c.newValue))") }
        var wallets = [OlWallet()]
        for _ in 0..<depth { let next = OlWallet(); wallets.last!.spare = next; wallets.append(next) }
        owner.wallet = wallets[0]
        wallets.last!.balance = 7
        #expect(log.values.last == "Optional(7)", "\(log.values)")
        #expect(try owner.value(forKeyPath: name) as? Int == 7)
        token.invalidate()
    }

    @Test func aDependentKeyPastAnOptionalLinkByNameIsTheTypedOne() throws {
        let owner = OlOwner()
        let typed = Log<String>()
        let named = Log<String>()
        var typedError: KVOError?
        var namedError: KVOError?
        var tokens: [ObservationToken] = []
        do { tokens.append(try owner.observe(\.wallet?.display, options: Self.all) { _, c in typed.append(text(c)) }) } catch { typedError = error }
        do { tokens.append(try owner.observe(keyPath: "wallet.display", options: Self.all) { _, c in named.append(text(c)) }) } catch { namedError = error }
        #expect(typedError == namedError, "typed \(String(describing: typedError?.detail)) named \(String(describing: namedError?.detail))")
        let wallet = OlWallet()
        owner.wallet = wallet
        wallet.balance = 3
        owner.wallet = nil
        #expect(named.values == typed.values, "named \(named.values)\ntyped \(typed.values)")
        for token in tokens { token.invalidate() }
    }

    @Test func aComputedPropertyPastANilLinkIsRefusedAsTyped() throws {
        for hasWallet in [false, true] {
            let owner = OlOwner()
            if hasWallet { owner.wallet = OlWallet(2) }
            var typedError: KVOError?
            var namedError: KVOError?
            do { _ = try owner.observe(\.wallet?.doubled) { _, _ in } } catch { typedError = error }
            do { _ = try owner.observe(keyPath: "wallet.doubled") { _, _ in } } catch { namedError = error }
            #expect(typedError != nil)
            #expect(typedError == namedError, "typed \(String(describing: typedError?.detail)) named \(String(describing: namedError?.detail))")
            #expect(try owner.value(forKeyPath: "wallet.doubled") as? Int == (hasWallet ? 4 : nil))
        }
    }

    @Test func subclassesAndBaseTypedReferencesShareOneControllerEntry() throws {
        let derived = OlDerived()
        let base: OlOwner = derived
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try kvo.observe(derived, \.wallet?.balance, options: .new) { _, _, c in log.append("typed \(String(describing: c.newValue))") })
        #expect(try kvo.observe(base, keyPath: "wallet.balance") { _, _, _ in log.append("twice") } == false)
        #expect(try kvo.observe(derived, keyPath: "wallet.balance") { _, _, _ in log.append("twice") } == false)
        #expect(try kvo.observe(base, \OlOwner.wallet?.balance) { _, _, _ in log.append("twice") } == false)
        #expect(kvo.observedKeyPaths(of: derived).count == 1)
        derived.wallet = OlWallet(3)
        #expect(log.values == ["typed Optional(Optional(3))"])
        #expect(kvo.unobserve(base, keyPath: "wallet.balance"))
        #expect(kvo.unobserve(derived, \.wallet?.balance) == false)
        #expect(kvo.observedKeyPaths(of: derived).isEmpty)
        // And the other way round: by name first, the literal finds it.
        #expect(try kvo.observe(base, keyPath: "wallet.balance") { _, _, _ in log.append("named") })
        #expect(try kvo.observe(derived, \.wallet?.balance) { _, _, _ in log.append("twice") } == false)
        derived.wallet?.balance = 4
        #expect(log.values.last == "named")
        #expect(kvo.unobserve(derived, \OlDerived.wallet?.balance))
        #expect(kvo.unobserve(base, keyPath: "wallet.balance") == false)
        withExtendedLifetime(observer) {}
    }

    @Test func anOverriddenOptionalLinkByNameIsDecidedAsTheTypedChain() throws {
        // `\OlOverrider.wallet?.balance` names the subclass's override; the
        // name "wallet.balance" on an OlOverrider must be decided the same way.
        let owner = OlOverrider()
        let typed = Log<String>()
        let named = Log<String>()
        let based = Log<String>()
        var errors: [String: KVOError] = [:]
        var tokens: [ObservationToken] = []
        do {
            tokens.append(try owner.observe(\.wallet?.balance, options: .new) { _, c in typed.append(text(c)) })
        } catch { errors["typed"] = error }
        do {
            tokens.append(try owner.observe(keyPath: "wallet.balance", options: .new) { _, c in named.append(text(c)) })
        } catch { errors["named"] = error }
        do {
            tokens.append(try (owner as OlOwner).observe(\OlOwner.wallet?.balance, options: .new) { o, c in
                based.append(text(c))
                #expect(c.newValue == o.wallet?.balance)
            })
        } catch { errors["based"] = error }
        let outer = OlWallet(1)
        let inner = OlWallet(2)
        owner.wallet = outer
        outer.balance = 10
        outer.spare = inner  // the override now reads `inner`
        inner.balance = 20
        outer.balance = 11  // not read any more
        #expect(try owner.value(forKeyPath: "wallet.balance") as? Int == 20)
        // Refused (the override reads past the declared link), by either
        // spelling, with the same error; never values of another property.
        #expect(errors["typed"] == errors["named"], "\(errors)")
        #expect(named.values == typed.values, "named \(named.values)\ntyped \(typed.values)")
        #expect(based.values.isEmpty || errors["based"] == nil)
        for token in tokens { token.invalidate() }
    }

    /// `\T.wallet?.balance` written in a generic context (its components
    /// capture generic arguments).
    private static func observeGenerically<T: OlOwner>(
        _ kvo: KVOController<Observer>, _ object: T, _ log: Log<String>
    ) throws -> Bool {
        try kvo.observe(object, \T.wallet?.balance, options: .new) { _, _, c in log.append("generic \(text(c))") }
    }

    @Test func aLiteralWrittenInAGenericContextIsTheSameEntryAsTheName() throws {
        let derived = OlDerived()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try Self.observeGenerically(kvo, derived, log))
        #expect(try kvo.observe(derived, keyPath: "wallet.balance") { _, _, _ in log.append("twice") } == false)
        #expect(try kvo.observe(derived, \.wallet?.balance) { _, _, _ in log.append("twice") } == false)
        derived.wallet = OlWallet(2)
        #expect(log.values == ["generic false nil→Optional(2)"])
        #expect(kvo.unobserve(derived, keyPath: "wallet.balance"))
        #expect(try kvo.observe(derived, keyPath: "wallet.balance") { _, _, _ in log.append("named") })
        #expect(try Self.observeGenerically(kvo, derived, log) == false)
        withExtendedLifetime(observer) {}
    }

    @Test func genericClassesObserveOptionalLinksByName() throws {
        let ints = OlBox(1)
        let strings = OlBox("a")
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try kvo.observe(ints, keyPath: "wallet.balance", options: .new) { _, _, c in log.append("ints \(text(c))") })
        #expect(try kvo.observe(ints, \.wallet?.balance) { _, _, _ in log.append("twice") } == false)
        #expect(try kvo.observe(strings, \.wallet?.balance, options: .new) { _, _, c in log.append("strings \(text(c))") })
        #expect(try kvo.observe(strings, keyPath: "wallet.balance") { _, _, _ in log.append("twice") } == false)
        ints.wallet = OlWallet(1)
        strings.wallet = OlWallet(2)
        #expect(log.values == ["ints false nil→Optional(1)", "strings false nil→Optional(2)"])
        #expect(kvo.unobserve(strings, keyPath: "wallet.balance"))
        #expect(kvo.unobserve(ints, \.wallet?.balance))
        withExtendedLifetime(observer) {}
    }

    @Test func introspectionListsANamedChainAsItsLiteral() throws {
        let owner = OlOwner()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        #expect(try kvo.observe(owner, keyPath: "wallet.spare.nickname") { _, _, _ in })
        let description = kvo.description
        #expect(description.contains("wallet?.spare?.nickname"), "\(description)")
        #expect(!description.contains("optionalLinkTail"), "\(description)")
        owner.wallet = OlWallet()
        let listed = owner.observations.map(\.key)
        #expect(listed.contains("wallet"), "\(listed)")
        #expect(owner.wallet!.observations.map(\.key).contains("spare"))
        let token = try owner.observe(keyPath: "wallet.spare.nickname") { _, _ in }
        #expect(!String(describing: owner.observations).contains("optionalLinkTail"))
        token.invalidate()
        withExtendedLifetime(observer) {}
    }

    @Test func tableEntriesThatAreChainsOrTheIdentityComposeAsTyped() throws {
        let owner = OlOddTable()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        #expect(try kvo.observe(owner, \.wallet?.spare?.balance, options: .new) { _, _, c in log.append(text(c)) })
        // An entry that is itself an optional chain, then a name past it.
        #expect(try kvo.observe(owner, keyPath: "spareOfWallet.balance") { _, _, _ in log.append("twice") } == false)
        var outcome = "observed"
        do { try kvo.observe(owner, keyPath: "me.wallet.spare.balance") { _, _, _ in log.append("twice") } } catch {
            outcome = "\(error)"
        }
        owner.wallet = OlWallet()
        owner.wallet?.spare = OlWallet(9)
        #expect(log.values.last == "false nil→Optional(9)", "\(log.values)")
        #expect(!log.values.contains("twice"), "\(log.values) \(outcome)")
        #expect(try owner.value(forKeyPath: "spareOfWallet.balance") as? Int == 9)
        #expect(try owner.value(forKeyPath: "me.wallet.spare.balance") as? Int == 9)
        withExtendedLifetime(observer) {}
    }

    @Test func theControllerListsTheKeyPathTheLiteralIsEqualTo() throws {
        let owner = OlOwner()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        #expect(try kvo.observe(owner, keyPath: "wallet.balance") { _, _, _ in })
        let literal: AnyKeyPath = \OlOwner.wallet?.balance
        let delivered = Log<AnyKeyPath>()
        let token = try owner.observe(keyPath: "wallet.balance") { _, change in delivered.append(change.keyPath) }
        owner.wallet = OlWallet()
        token.invalidate()
        withKnownIssue(
            """
            Through an optional link, the key path a name stands for (listed by observedKeyPaths(of:), \
            carried by ObservedChange.keyPath) is the composed \\Owner.wallet + \\Wallet?.?[optionalLinkTail:], \
            which reads, spells and files as \\.wallet?.balance but is not == to the literal
            """
        ) {
            #expect(kvo.observedKeyPaths(of: owner).contains(literal), "\(kvo.observedKeyPaths(of: owner))")
            #expect(delivered.values.first == literal)
        }
        withExtendedLifetime(observer) {}
    }

    @Test func linksReplacedFromOtherThreadsDeliverEachSettledChangeOnce() throws {
        let owner = OlOwner()
        let wallets = (0..<3).map { OlWallet($0) }
        let typed = Counter()
        let named = Counter()
        let valuesMatch = Atomic<Bool>(true)
        let t1 = try owner.observe(\.wallet?.balance, options: .new) { _, _ in typed.increment() }
        let t2 = try owner.observe(keyPath: "wallet.balance", options: .new) { o, c in
            named.increment()
            if !(c.newValue is Int?) { valuesMatch.store(false, ordering: .relaxed) }
        }
        // Assignments to one property are serialized, as `@Observed` asks;
        // the changes, their dispatch and the chain's re-linking contend.
        let writes = LockedState(0)  // a lock ThreadSanitizer sees, around a state of some size
        runConcurrently(4) { index in
            for step in 0..<2_000 {
                writes.withLock { _ in
                    switch index {
                    case 0: owner.wallet = step % 4 == 0 ? nil : wallets[step % 3]
                    case 1: owner.wallet = wallets[(step + 1) % 3]
                    default: wallets[step % 3].balance = step
                    }
                }
            }
        }
        let matched = valuesMatch.load(ordering: .relaxed)
        #expect(matched)
        // Settled: each change on the path arrives once to each.
        let wallet = OlWallet(-1)
        owner.wallet = wallet
        let (typedBefore, namedBefore) = (typed.count, named.count)
        for value in 0..<100 { wallet.balance = value }
        wallets[0].balance = 1_000  // off the path
        #expect(typed.count - typedBefore == 100)
        #expect(named.count - namedBefore == 100)
        t1.invalidate()
        t2.invalidate()
    }

    @Test(arguments: [true, false])
    func noCallAfterInvalidateWhileLinksChurn(byName: Bool) throws {
        // A dispatch that starts after `invalidate()` returned must not call
        // the handler (SPEC §2 item 11). Delivery is synchronous on the
        // changing thread: each change notes whether it started after.
        let late = Counter()
        for _ in 0..<20 {
            let owner = OlOwner()
            let wallets = (0..<2).map { OlWallet($0) }
            owner.wallet = wallets[0]
            let invalidated = Atomic<Bool>(false)
            let handler: @Sendable (OlOwner) -> Void = { _ in
                if Thread.current.threadDictionary["olStartedAfterInvalidate"] as? Bool == true { late.increment() }
            }
            let token =
                byName
                ? try owner.observe(keyPath: "wallet.balance", options: .new) { o, _ in handler(o) }
                : try owner.observe(\.wallet?.balance, options: .new) { o, _ in handler(o) }
            // Assignments are serialized (`@Observed` asks it of concurrent
            // writers); the invalidation is not.
            let writes = LockedState(0)  // a lock ThreadSanitizer sees, around a state of some size
            runConcurrently(3) { index in
                var step = 0
                switch index {
                case 0:
                    while step < 300 {
                        writes.withLock { _ in owner.wallet = step % 3 == 0 ? nil : wallets[step % 2] }
                        step += 1
                    }
                    token.invalidate()
                    invalidated.store(true, ordering: .releasing)
                default:
                    while !invalidated.load(ordering: .acquiring) || step < 400 {
                        writes.withLock { _ in
                            Thread.current.threadDictionary["olStartedAfterInvalidate"] = invalidated.load(ordering: .acquiring)
                            if step % 2 == 0 { wallets[index - 1].balance = step } else { owner.wallet = wallets[index - 1] }
                        }
                        step += 1
                    }
                }
            }
        }
        #expect(late.count == 0)
    }

    @Test func concurrentFirstResolutionsOfOneNameAgree() throws {
        if refusedWithoutLayout({ _ = try OlBox<Double>(0).observe(\.wallet?.spare?.balance) { _, _ in } }) { return }
        let owners = (0..<8).map { _ in OlBox<Double>(0) }
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let accepted = Counter()
        runConcurrently(8) { index in
            let owner = owners[index % 2]
            if (try? kvo.observe(owner, keyPath: "wallet.spare.balance") { _, _, _ in }) == true { accepted.increment() }
            if (try? kvo.observe(owner, \.wallet?.spare?.balance) { _, _, _ in }) == true { accepted.increment() }
        }
        #expect(accepted.count == 2)
        withExtendedLifetime(observer) {}
    }

    @Test func theRootOrALinkDyingEndsOrReleasesWhatItShould() throws {
        let deaths = Counter()
        var owner: OlOwner? = OlOwner()
        var wallet: OlWallet? = OlWallet(1, onDeinit: { deaths.increment() })
        owner!.wallet = wallet
        let log = Log<String>()
        let token = try owner!.observe(keyPath: "wallet.spare.balance", options: .new) { _, c in log.append(text(c)) }
        wallet!.spare = OlWallet(2, onDeinit: { deaths.increment() })
        #expect(deaths.count == 0)
        wallet!.spare = nil  // the spare dies: the chain does not keep it
        flushReleases()
        #expect(deaths.count == 1)
        wallet = nil
        owner!.wallet = nil  // the wallet dies
        flushReleases()
        #expect(deaths.count == 2)
        owner = nil
        flushReleases()
        #expect(token.isValid == false)
        #expect(token.invalidate() == false)
        #expect(log.values.count == 3, "\(log.values)")
    }
}

import Testing

@testable import SwiftKVO

// Key paths are resolved from what is declared (SPEC §2 item 17): every
// delivered value is what the key path reads, and what cannot be observed is
// refused at registration, naming the part at fault, without evaluating a key
// path that could trap.

private final class Wallet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["balance": \Wallet.balance] }
    @Observed var balance = 0.0
    var cents: Double { balance * 100 }
}

private final class Purse: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["wallet": \Purse.wallet, "pages": \Purse.pages, "entries": \Purse.entries] }
    @Observed var wallet: Wallet?
    @Observed var pages: [String] = []
    @ObservedArray var entries: [String] = []
    init(wallet: Wallet?) { self.wallet = wallet }
}

private protocol Titled: AnyObject {
    var title: String { get }
}

private final class Profile: KeyValueObservable, Titled, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["first": \Profile.first] }
    @Observed var first = "grace"
    var title: String { first.uppercased() }
}

private final class Card: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["title": \Card.title, "profile": \Card.profile, "owner": \Card.owner] }
    @Observed var title = ""
    @Observed var profile = Profile()
    @Observed var owner: any Titled = Profile()
    var headline: String { "\(title) \(profile.first)" }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Card.headline: [\Card.title, \Card.profile.first]]
    }
}

private final class Badge: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["title": \Badge.title, "profile": \Badge.profile] }
    @Observed var title = ""
    @Observed var profile: Profile?
    var label: String { "\(title) \(profile?.first ?? "-")" }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Badge.label: [\Badge.title, \Badge.profile!.first]]
    }
}

private class Member: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \Member.name] }
    @Observed var name = "ada"
}

/// Overrides the property with an observer: its key path reads the stored value.
private final class Staff: Member, @unchecked Sendable {
    var renames = 0
    override var name: String { didSet { renames += 1 } }
}

/// Overrides the property's getter: its key path reads something else.
private final class Shouter: Member, @unchecked Sendable {
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

/// A dependent key with a computed source that traps when read.
private final class Shelf: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["items": \Shelf.items, "title": \Shelf.title] }
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }  // traps on an empty shelf
    var headline: String { "\(title) \(firstItem)" }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\Shelf.headline: [\Shelf.title, \Shelf.firstItem]]
    }
}

@Suite(.needsLayout("its registrations")) struct KeyPathResolutionTests {
    // Item 1: a chain ending in a computed property.

    @Test func chainEndingInAComputedPropertyIsRefused() {
        let purse = Purse(wallet: Wallet())
        #expect(throws: KVOError.unsupportedKeyPath) {
            try purse.observe(\.wallet?.cents, options: .new) { _, _ in }
        }
        #expect(throws: KVOError.unsupportedKeyPath) {
            try purse.observe(\.wallet?.balance.magnitude, options: .new) { _, _ in }
        }
    }

    @Test func chainThroughAnExistentialLinkIsRefusedNamingTheLink() {
        let card = Card()
        do {
            _ = try card.observe(\.owner.title, options: .new) { _, _ in }
            Issue.record("a chain through an existential was accepted")
        } catch {
            #expect(error == .unsupportedKeyPath)
            #expect(error.detail?.contains(isFallbackRun ? layoutRefusal : "not a KeyValueObservable class") == true)
        }
    }

    @Test func optionalChainThroughANilLinkToAComputedLeafIsRefused() throws {
        // No wallet to read: Wallet's table alone says `cents` is computed.
        let purse = Purse(wallet: nil)
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try purse.observe(\.wallet?.cents, options: .new) { _, _ in } }
        purse.wallet = Wallet()
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try purse.observe(\.wallet?.cents, options: .new) { _, _ in } }
    }

    // Item 4: dependent sources behind a chain or a force-unwrap.

    @Test func dependentKeyWithASourceBehindAChainIsRefusedAtRegistration() {
        let card = Card()
        do {
            _ = try card.observe(\.headline, options: .new) { _, _ in }
            Issue.record("a dependent key whose source is a chain was accepted")
        } catch {
            #expect(error == .unsupportedKeyPath)
            #expect(error.detail?.contains(isFallbackRun ? layoutRefusal : "source") == true)
        }
    }

    @Test func forceUnwrappedDependentSourceNeverTrapsASetter() {
        let badge = Badge()
        badge.title = "first assignment"  // trapped on main: the source was evaluated
        badge.profile = nil
        #expect(badge.title == "first assignment")
        #expect(throws: KVOError.forceUnwrappedKeyPath) {
            try badge.observe(\.label, options: .new) { _, _ in }
        }
    }

    // Item 5: overridden properties.

    @Test func overriddenPropertyIsObservedThroughTheSubclassKeyPath() throws {
        let staff = Staff()
        let log = Log<String>()
        let token = try staff.observe(\.name, options: [.old, .new]) { _, change in
            log.append("\(change.oldValue ?? "-")→\(change.newValue ?? "-")")
        }
        staff.name = "grace"
        #expect(log.values == ["ada→grace"])
        #expect(staff.renames == 1)
        token.invalidate()
    }

    @Test func controllerObservesAnOverriddenPropertyByTheInferredSubclassKeyPath() throws {
        let staff = Staff()
        let observer = Observer()
        let kvo = KVOController(observer: observer)
        let log = Log<String>()
        try kvo.observe(staff, \.name, options: .new) { _, _, change in
            log.append(change.newValue ?? "-")
        }
        staff.name = "grace"
        #expect(log.values == ["grace"])
        kvo.unobserveAll()
    }

    @Test func overriddenGetterDeliversWhatTheKeyPathReads() throws {
        let shouter = Shouter()
        let log = Log<String>()
        let token = try shouter.observe(\.name, options: [.initial, .old, .new]) { shouter, change in
            #expect(change.newValue == nil || change.newValue == shouter.name)
            log.append("\(change.oldValue ?? "-")→\(change.newValue ?? "-")")
        }
        shouter.name = "grace"
        #expect(log.values == ["-→ADA", "ADA→GRACE"])
        token.invalidate()
    }

    // Item 6: subscripts are refused, never evaluated.

    @Test func subscriptKeyPathIsRefusedWithoutEvaluatingIt() {
        let purse = Purse(wallet: nil)  // `pages` is empty: `pages[0]` would trap
        #expect(throws: KVOError.unsupportedKeyPath) {
            try purse.observe(\.pages[0], options: .new) { _, _ in }
        }
        #expect(throws: KVOError.unsupportedKeyPath) {
            try purse.observe(\.entries[0], options: .new) { _, _ in }
        }
        let kvo = KVOController(observer: Observer())
        #expect(kvo.unobserve(purse, \.pages[0]) == false)
        purse.willChangeValue(for: \.pages[0])
        purse.didChangeValue(for: \.pages[0])
    }

    // Item 8: a chain ends when its root dies.

    @Test func chainReleasesItsHandlerWhenItsRootDies() throws {
        let released = Counter()
        let wallet = Wallet()
        var token: ObservationToken?
        do {
            let purse = Purse(wallet: wallet)
            let probe = LifetimeProbe(released)
            token = try purse.observe(\.wallet?.balance, options: .new) { _, _ in
                _ = probe
            }
        }
        // The root is gone; its link on the wallet (which lives on) went with
        // it, and the handler with what it captures is released.
        _ = Engine.flush()
        #expect(released.count == 1)
        #expect(token?.isValid == false)
        wallet.balance = 1
        #expect(token?.invalidate() == false)
    }

    // A setter never reads a dependent key's sources.

    @Test func setterNeverEvaluatesADependentKeysSources() throws {
        let shelf = Shelf()
        shelf.title = "x"  // trapped on the attack branch: the computed source was read
        #expect(shelf.title == "x")
        shelf.title = "y"
        #expect(shelf.title == "y")
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

    @Test func tuplesSelfStructsAndExistentialsAreRefused() {
        let purse = CaPurse()
        #expect(throws: KVOError.self) { _ = try purse.observe(\.tuple.0) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try purse.observe(\.self) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try purse.observe(\.pair.a) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try purse.observe(\.pair.sum) { _, _ in } }
        #expect(throws: KVOError.self) { _ = try purse.observe(\.named?.name) { _, _ in } }
        let shelf = CaGenShelf<Double>()
        #expect(throws: KVOError.self) { _ = try shelf.observe(\.self) { _, _ in } }
        let kvo = KVOController(observer: CaObserver())
        #expect(kvo.unobserve(purse, \.self) == false)
        purse.willChangeValue(for: \.self)
        purse.didChangeValue(for: \.self)
    }
}

/// A tuple, an array and an optional link: key paths into each are refused.
private final class KprSheet: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    @Observed var pair = (1, "one")
    @ObservedArray var items: [Int] = [1]
    @Observed var child: KprSheet?
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["pair": \KprSheet.pair, "items": \KprSheet.items, "child": \KprSheet.child]
    }
}

extension KeyPathResolutionTests {
    @Test func refusalDetailsNameDeclaredPropertiesNeverAddresses() throws {
        let sheet = KprSheet()
        sheet.child = KprSheet()
        let refused: [(AnyKeyPath, String, () throws -> Void)] = [
            (\KprSheet.pair.0, "\\KprSheet.pair.<", { _ = try sheet.observe(\.pair.0) { _, _ in } }),
            (\KprSheet.items[0], "\\KprSheet.items.<a subscript>", { _ = try sheet.observe(\.items[0]) { _, _ in } }),
            (\KprSheet.child?.pair.0, "\\KprSheet.child?.pair.<", { _ = try sheet.observe(\.child?.pair.0) { _, _ in } }),
        ]
        for (keyPath, spelled, register) in refused {
            let error = #expect(throws: KVOError.unsupportedKeyPath, "\(keyPath)") { try register() }
            let detail = error?.detail ?? ""
            #expect(!detail.contains("0x"), "an address in: \(detail)")
            #expect(!detail.contains("<computed"), "the runtime's spelling in: \(detail)")
            // With the layout, each property is named; without it (the
            // self-check failed), the key path is spelled by its value type.
            if !isFallbackRun { #expect(detail.hasPrefix(spelled), "\(detail)") }
        }
    }
}

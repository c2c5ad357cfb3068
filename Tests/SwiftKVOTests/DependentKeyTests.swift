import Testing
@testable import SwiftKVO

/// `greeting` is computed from `fullName`, itself computed from two properties.
final class Greeter: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["firstName": \Greeter.firstName, "lastName": \Greeter.lastName] }
    @Observed var firstName = ""
    @Observed var lastName = ""
    var fullName: String { "\(firstName) \(lastName)" }
    var greeting: String { "Hello, \(fullName)" }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [
            \Greeter.fullName: [\Greeter.firstName, \Greeter.lastName],
            \Greeter.greeting: [\Greeter.fullName],
        ]
    }
}

/// Declares `left` from `right` and `right` from `left`: a cycle.
final class Ouroboros: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["seed": \Ouroboros.seed] }
    @Observed var seed = 0
    var left: Int { seed }
    var right: Int { seed + 1 }
    var outside: Int { seed + 2 }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [
            \Ouroboros.left: [\Ouroboros.right, \Ouroboros.seed],
            \Ouroboros.right: [\Ouroboros.left],
            \Ouroboros.outside: [\Ouroboros.seed],
        ]
    }
}

/// A property observed while another class's table names it.
final class Bystander: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["label": \Bystander.label] }
    @Observed var label = ""
}

/// A table with entries that are not this class's to declare: one rooted in
/// another class, and one naming an observable property of its own.
final class Overreacher: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["title": \Overreacher.title, "stored": \Overreacher.stored] }
    @Observed var title = ""
    @Observed var stored = 0
    var summary: String { title }

    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [
            \Bystander.label: [\Overreacher.title],
            \Overreacher.summary: [\Bystander.label, \Overreacher.title],
            \Overreacher.stored: [\Overreacher.title],
        ]
    }
}

// SPEC §2.12: dependent keys, transitively, as Apple KVO follows them.
@Suite(.needsLayout("its registrations")) struct DependentKeyTests {
    @Test func dependentKeyOfADependentKeyIsNotifiedWhenASourceChanges() throws {
        let greeter = Greeter()
        let log = Log<String>()
        let token = try greeter.observe(\.greeting, options: [.prior, .old, .new]) { _, change in
            log.append("\(change.isPrior ? "prior " : "")\(change.oldValue ?? "-")→\(change.newValue ?? "-")")
        }
        greeter.firstName = "Ada"
        greeter.lastName = "L"
        #expect(
            log.values == [
                "prior Hello,  →-", "Hello,  →Hello, Ada ",
                "prior Hello, Ada →-", "Hello, Ada →Hello, Ada L",
            ])
        token.invalidate()
    }

    @Test func manualChangeOfADependentKeyNotifiesItsDependents() throws {
        let greeter = Greeter()
        let greetings = Counter()
        let fullNames = Counter()
        let a = try greeter.observe(\.greeting) { _, _ in greetings.increment() }
        let b = try greeter.observe(\.fullName) { _, _ in fullNames.increment() }
        greeter.willChangeValue(for: \.fullName)
        greeter.didChangeValue(for: \.fullName)
        #expect(fullNames.count == 1)
        #expect(greetings.count == 1)
        a.invalidate()
        b.invalidate()
    }

    @Test func eachDependentKeyIsAnnouncedOncePerChange() throws {
        let greeter = Greeter()
        let greetings = Counter()
        let token = try greeter.observe(\.greeting) { _, _ in greetings.increment() }
        greeter.lastName = "B"
        #expect(greetings.count == 1)
        token.invalidate()
    }

    @Test func dependencyCycleIsRefusedAtRegistration() throws {
        let object = Ouroboros()
        let calls = Counter()
        #expect(throws: KVOError.dependencyCycle) {
            try object.observe(\.left) { _, _ in calls.increment() }
        }
        #expect(throws: KVOError.dependencyCycle) {
            try KVOController(observer: Observer()).observe(object, \.right) { _, _, _ in calls.increment() }
        }
        // The rest of the class stays observable, and a setter never follows the cycle.
        let token = try object.observe(\.outside, options: .new) { _, change in
            #expect(change.newValue == 7)
            calls.increment()
        }
        object.seed = 5
        #expect(calls.count == 1)
        token.invalidate()
    }

    @Test func aDependentKeyRootedInAnotherClassNeverCapturesThatClassesProperty() throws {
        let overreacher = Overreacher()
        // `summary` names a source of another class: refused, and making it
        // must not turn `Bystander.label` into a key its setter never announces.
        #expect(throws: KVOError.unsupportedKeyPath) { try overreacher.observe(\.summary) { _, _ in } }
        overreacher.title = "t"
        let bystander = Bystander()
        let values = Log<String>()
        let token = try bystander.observe(\.label, options: .new) { _, change in
            values.append(change.newValue ?? "-")
        }
        bystander.label = "seen"
        #expect(values.values == ["seen"])
        token.invalidate()
    }

    @Test func anObservablePropertyDeclaredAsADependentKeyIsRefusedWithItsReason() throws {
        let overreacher = Overreacher()
        // `stored` is an @Observed property its class also declares as a
        // dependent key: neither reading of it would deliver every change, so
        // observing it is refused, naming the declaration.
        let error = #expect(throws: KVOError.unsupportedKeyPath) {
            try overreacher.observe(\.stored, options: .new) { _, _ in }
        }
        #expect(error?.detail?.contains("dependentKeyPaths") == true, "\(String(describing: error))")
        overreacher.stored = 3  // setters are unaffected
        overreacher.title = "x"
        #expect(overreacher.stored == 3)
    }

    @Test func aComputedDependentSourceDoesNotTrapAPlainAssignment() {
        let card = AtkCard()
        card.title = "x"  // no observer anywhere
        #expect(card.title == "x")
    }

    @Test func aComputedDependentSourceIsNeverRun() {
        let card = AtkCard()
        // Nothing observed: the first assignment resolves the sources.
        card.title = "x"
        #expect(throws: KVOError.self) { _ = try card.observe(\.headline) { _, _ in } }
    }

    @Test func dependentTablesWithForeignChainedForcedOrSelfSourcesNeverTrap() throws {
        let odd = AtkOddDependents()
        odd.title = "t"  // plain assignment with an odd table: no trap
        odd.holder = AtkHolder()
        odd.holder?.owner.label = "x"
        for keyPath in [\AtkOddDependents.foreignSourced, \AtkOddDependents.chainSourced,
                        \AtkOddDependents.bangSourced, \AtkOddDependents.selfSourced] {
            let recorder = Recorder<String?>()
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
}

final class AtkCard: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["items": \AtkCard.items, "title": \AtkCard.title] }
    @ObservedArray var items: [String] = []
    @Observed var title = ""
    var firstItem: String { items[0] }
    var headline: String { title + (items.first ?? "") }
    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
        [\AtkCard.headline: [\AtkCard.title, \AtkCard.firstItem]]
    }
}

final class AtkOddDependents: KeyValueObservable, @unchecked Sendable {
    let kvoRegistrar = KVORegistrar()
    static var observableKeyPaths: [String: AnyKeyPath] { ["title": \AtkOddDependents.title, "holder": \AtkOddDependents.holder] }
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

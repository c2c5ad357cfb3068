#if Macros
import SwiftKVOMacroFixtures
import SwiftKVOMacros
import Testing

// Classes declared with `@KeyValueObservable` in the shapes its expansion tests pin: each one
// compiles the expansion for real (an expansion that does not compile fails the build), and the
// tests check that what it declares is reachable by name.

/// Every collection kind, written plainly, through a typealias of the class's own and by hand.
@KeyValueObservable
final class MacroCollections: @unchecked Sendable {
    typealias Labels = Set<Int>
    var tags: Set<String> = []
    var qualified: Swift.Set<String> = []
    var labels: Labels = []
    var maybeTags: Set<String>? = nil
    var items: Array<Int> = []
    @ObservedSet var alarms: Set<String> = []
    @ObservedArray var readings: [Int] = []
    @Observed var level = 0
    /// Traps on an empty shelf: observing it must be refused from the table, never by running it.
    var firstAlarm: String { alarms.sorted()[0] }
}

/// Members under `#if`: listed under the same `#if`.
@KeyValueObservable
final class MacroConditional: @unchecked Sendable {
    var name = ""
    #if swift(>=5.9)
    var always: [String] = []
    #else
    var never = 0
    #endif
    #if canImport(NoSuchModuleAnywhere)
    var absent = 0
    #elseif os(Linux) || os(macOS) || os(Windows) || os(iOS)
    var present: Set<Int> = []
    #endif
    /// Traps while `always` is empty (see `MacroCollections.firstAlarm`).
    var firstAlways: String { always[0] }
}

/// A property wrapper of the user's own, named in lowercase: left as written.
@propertyWrapper
struct clamped {  // swiftlint:disable:this type_name
    private var value: Int
    init(wrappedValue: Int) { value = min(max(wrappedValue, 0), 10) }
    var wrappedValue: Int {
        get { value }
        set { value = min(max(newValue, 0), 10) }
    }
}

@KeyValueObservable
final class MacroClamped: @unchecked Sendable {
    @clamped var volume = 20
    var name = ""
}

/// A `nonisolated(unsafe)` property in a checked `Sendable` class: left as written.
@KeyValueObservable
final class MacroCounter: Sendable {
    nonisolated(unsafe) var hits = 0
    let label = "counter"
}

/// A deprecated property: listed, and the table compiles without a warning.
@KeyValueObservable
final class MacroLegacy: @unchecked Sendable {
    var name = ""
    @available(*, deprecated, renamed: "name")
    var title = ""
}

/// A subclass of an open macro class in another module, overriding its open tables.
final class LocalDocument: MacroFixtureDocument, @unchecked Sendable {
    @Observed var pages = 0
    override class var observableKeyPaths: [String: AnyKeyPath] {
        super.observableKeyPaths.merging(["pages": \LocalDocument.pages]) { _, new in new }
    }
}

@Suite struct MacroShapeTests {
    @Test func eachCollectionKindGetsItsWrapperAndIsReachableByName() throws {
        let shelf = MacroCollections()
        #expect(
            Set(MacroCollections.observableKeyPaths.keys)
                == ["tags", "qualified", "labels", "maybeTags", "items", "alarms", "readings", "level"])
        let log = Log()
        let tokens = try ["tags", "labels", "alarms"].map { key in
            try shelf.observe(keyPath: key, options: .new) { _, change in log.add("\(key) \(change.kind)") }
        }
        try shelf.mutableSetValue(forKey: "tags", of: String.self).insert("a")
        try shelf.mutableSetValue(forKey: "labels", of: Int.self).insert(1)
        try shelf.mutableSetValue(forKey: "alarms", of: String.self).insert("fire")
        #expect(log.all == ["tags insertion", "labels insertion", "alarms insertion"])
        #expect(try shelf.value(forKey: "alarms") as? Set<String> == ["fire"])
        #expect(try shelf.value(forKey: "tags") as? Set<String> == ["a"])
        try shelf.mutableArrayValue(forKey: "items", of: Int.self).append(3)
        #expect(shelf.items == [3])
        tokens.forEach { $0.invalidate() }
    }

    @Test func membersUnderIfAreListedWhenTheirClauseIsActive() throws {
        #expect(Set(MacroConditional.observableKeyPaths.keys) == ["name", "always", "present"])
        let object = MacroConditional()
        object.always = ["x"]
        #expect(try object.value(forKey: "always") as? [String] == ["x"])
        try object.mutableSetValue(forKey: "present", of: Int.self).insert(2)
        #expect(object.present == [2])
    }

    /// Issue 34 item 3: with sets and `#if` members in the table, it is complete, so a computed
    /// property is refused from it without its getter running (each getter here would trap).
    @Test func aComputedPropertyBesideSetsAndIfMembersIsRefusedWithoutRunningItsGetter() {
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try MacroCollections().observe(\.firstAlarm) { _, _ in } }
        #expect(throws: KVOError.unsupportedKeyPath) { _ = try MacroConditional().observe(\.firstAlways) { _, _ in } }
    }

    @Test func aLowercaseWrapperOfTheUsersOwnIsLeftAsWritten() {
        let object = MacroClamped()
        #expect(object.volume == 10)
        #expect(Set(MacroClamped.observableKeyPaths.keys) == ["name"])
    }

    @Test func aNonisolatedUnsafePropertyIsLeftAsWritten() {
        let counter = MacroCounter()
        counter.hits += 1
        #expect(counter.hits == 1)
        #expect(MacroCounter.observableKeyPaths.isEmpty)
    }

    @Test func aDeprecatedMemberIsListed() {
        #expect(Set(MacroLegacy.observableKeyPaths.keys) == ["name", "title"])
    }

    @Test func anOpenClassIsSubclassedAndItsTablesOverriddenInAnotherModule() throws {
        let document = LocalDocument()
        #expect(Set(LocalDocument.observableKeyPaths.keys) == ["title", "heading", "pages"])
        #expect(LocalDocument.dependentKeyPaths.count == 1)
        let log = Log()
        let tokens = [
            try document.observe(keyPath: "heading", options: .new) { _, change in
                log.add("heading \(change.newValue as? String ?? "?")")
            },
            try document.observe(keyPath: "pages", options: .new) { _, change in
                log.add("pages \(change.newValue as? Int ?? -1)")
            },
        ]
        document.title = "draft"
        document.pages = 3
        #expect(log.all == ["heading DRAFT", "pages 3"])
        tokens.forEach { $0.invalidate() }
    }
}
#endif

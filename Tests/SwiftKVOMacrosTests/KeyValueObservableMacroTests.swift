#if Macros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// What `@KeyValueObservable` writes, read as hand-written code.
@Suite struct KeyValueObservableMacroTests {
    @Test func accountExpandsToTheHandWrittenForm() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Account {
                var name = ""
                var balance = 0.0
                var transactions: [Transaction] = []
                @KVOIgnored var cache: [String: Int] = [:]
                @DependsOn(\.name, \.balance) var summary: String { "\(name): \(balance)" }
            }
            """#,
            expandedSource: #"""
                final class Account {
                    @Observed
                    var name = ""
                    @Observed
                    var balance = 0.0
                    @ObservedArray
                    var transactions: [Transaction] = []
                    var cache: [String: Int] = [:]
                    var summary: String { "\(name): \(balance)" }

                    let kvoRegistrar = KVORegistrar()

                    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        [
                            \Account.summary: [\Account.name, \Account.balance],
                        ]
                    }

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "name": \Account.name,
                            "balance": \Account.balance,
                            "transactions": \Account.transactions,
                            "summary": \Account.summary,
                        ]
                    }
                }

                extension Account: KeyValueObservable {
                }
                """#)
    }

    @Test func propertiesMarkedByHandKeepTheirAttributesAndAreListed() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Gauge {
                @Observed(notifiesAutomatically: false) var level = 0
                @ObservedArray var readings: [Int] = []
                @ObservedSet var alarms: Set<String> = []
            }
            """,
            expandedSource: #"""
                final class Gauge {
                    @Observed(notifiesAutomatically: false) var level = 0
                    @ObservedArray var readings: [Int] = []
                    @ObservedSet var alarms: Set<String> = []

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "level": \Gauge.level,
                            "readings": \Gauge.readings,
                            "alarms": \Gauge.alarms,
                        ]
                    }
                }

                extension Gauge: KeyValueObservable {
                }
                """#)
    }

    @Test func theWrittenTypeDecidesBetweenObservedObservedArrayAndObservedSet() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Lists {
                var `default`: [Int] = []
                var a: Array<Int> = []
                var b: Swift.Array<Int> = []
                var c: [Int]? = nil
                var d = [1, 2]
                var e: Set<Int> = []
                var f: Swift.Set<String> = []
                var g: Set<Int>? = nil
                typealias Tags = Set<String>
                typealias Names = [String]
                var h: Tags = []
                var i: Names = []
            }
            """,
            expandedSource: #"""
                final class Lists {
                    @ObservedArray
                    var `default`: [Int] = []
                    @ObservedArray
                    var a: Array<Int> = []
                    @ObservedArray
                    var b: Swift.Array<Int> = []
                    @Observed
                    var c: [Int]? = nil
                    @Observed
                    var d = [1, 2]
                    @ObservedSet
                    var e: Set<Int> = []
                    @ObservedSet
                    var f: Swift.Set<String> = []
                    @Observed
                    var g: Set<Int>? = nil
                    typealias Tags = Set<String>
                    typealias Names = [String]
                    @ObservedSet
                    var h: Tags = []
                    @ObservedArray
                    var i: Names = []

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "default": \Lists.`default`,
                            "a": \Lists.a,
                            "b": \Lists.b,
                            "c": \Lists.c,
                            "d": \Lists.d,
                            "e": \Lists.e,
                            "f": \Lists.f,
                            "g": \Lists.g,
                            "h": \Lists.h,
                            "i": \Lists.i,
                        ]
                    }
                }

                extension Lists: KeyValueObservable {
                }
                """#)
    }

    @Test func letStaticComputedAndWrappedPropertiesAreLeftAsWritten() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Mixed {
                let id = 1
                static var shared = 0
                class var kind: String { "mixed" }
                var doubled: Int { count * 2 }
                var count = 0 {
                    didSet { print(count) }
                }
                @Clamped var level = 0
                @clamped var lowered = 0
                @MainActor var title = ""
                weak var delegate: AnyObject?
                nonisolated(unsafe) var hits = 0
                func reset() {}
            }
            """,
            expandedSource: #"""
                final class Mixed {
                    let id = 1
                    static var shared = 0
                    class var kind: String { "mixed" }
                    var doubled: Int { count * 2 }
                    @Observed
                    var count = 0 {
                        didSet { print(count) }
                    }
                    @Clamped var level = 0
                    @clamped var lowered = 0
                    @MainActor
                    @Observed var title = ""
                    weak var delegate: AnyObject?
                    nonisolated(unsafe) var hits = 0
                    func reset() {}

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        var table: [String: AnyKeyPath] = [
                            "count": \Mixed.count,
                        ]
                        table.merge(unsafeIsolatedKeyPaths { @MainActor () -> [String: AnyKeyPath] in
                            [
                                "title": \Mixed.title,
                            ]
                        }) { current, _ in
                            current
                        }
                        return table
                    }
                }

                extension Mixed: KeyValueObservable {
                }
                """#)
    }

    @Test func aRegistrarDeclaredByHandIsKept() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Kept {
                let kvoRegistrar = KVORegistrar()
                var name = ""
            }
            """,
            expandedSource: #"""
                final class Kept {
                    let kvoRegistrar = KVORegistrar()
                    @Observed
                    var name = ""

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "name": \Kept.name,
                        ]
                    }
                }

                extension Kept: KeyValueObservable {
                }
                """#)
    }

    @Test func tablesDeclaredByHandAreKept() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Named {
                var name = ""
                static var observableKeyPaths: [String: AnyKeyPath] { ["title": \Named.name] }
            }
            """#,
            expandedSource: #"""
                final class Named {
                    @Observed
                    var name = ""
                    static var observableKeyPaths: [String: AnyKeyPath] { ["title": \Named.name] }

                    let kvoRegistrar = KVORegistrar()
                }

                extension Named: KeyValueObservable {
                }
                """#)
    }

    @Test func aClassThatIsNotFinalGetsOverridableTables() {
        assertExpansion(
            #"""
            @KeyValueObservable
            class Base {
                var name = ""
                @DependsOn(\.name) var upper: String { name.uppercased() }
            }
            """#,
            expandedSource: #"""
                class Base {
                    @Observed
                    var name = ""
                    var upper: String { name.uppercased() }

                    let kvoRegistrar = KVORegistrar()

                    class var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        [
                            \Base.upper: [\Base.name],
                        ]
                    }

                    class var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "name": \Base.name,
                            "upper": \Base.upper,
                        ]
                    }
                }

                extension Base: KeyValueObservable {
                }
                """#)
    }

    @Test func aPublicClassGetsPublicMembers() {
        assertExpansion(
            """
            @KeyValueObservable
            public final class Shared {
                public var name = ""
            }
            """,
            expandedSource: #"""
                public final class Shared {
                    @Observed
                    public var name = ""

                    public let kvoRegistrar = KVORegistrar()

                    public static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "name": \Shared.name,
                        ]
                    }
                }

                extension Shared: KeyValueObservable {
                }
                """#)
    }

    @Test func dependenciesAreRootedInTheClassAndMayBeTransitive() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Person<Tag> {
                var first = ""
                var last = ""
                var tag: Tag
                @DependsOn(\.first, \Person.last) var full: String { "\(first) \(last)" }
                @DependsOn(\Self.full) var greeting: String { "Hello, \(full)" }
                init(tag: Tag) { self.tag = tag }
            }
            """#,
            expandedSource: #"""
                final class Person<Tag> {
                    @Observed
                    var first = ""
                    @Observed
                    var last = ""
                    @Observed
                    var tag: Tag
                    var full: String { "\(first) \(last)" }
                    var greeting: String { "Hello, \(full)" }
                    init(tag: Tag) { self.tag = tag }

                    let kvoRegistrar = KVORegistrar()

                    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        [
                            \Person.full: [\Person.first, \Person.last],
                            \Person.greeting: [\Person.full],
                        ]
                    }

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "first": \Person.first,
                            "last": \Person.last,
                            "tag": \Person.tag,
                            "full": \Person.full,
                            "greeting": \Person.greeting,
                        ]
                    }
                }

                extension Person: KeyValueObservable {
                }
                """#)
    }
    /// (The compiler gives members under `#if` their attributes too, which this harness does not
    /// show: `MacroShapeTests.membersUnderIfAreListedWhenTheirClauseIsActive` compiles them.)
    @Test func membersUnderIfAreListedUnderTheSameIf() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Diagnostics {
                var name = ""
                #if DEBUG
                var trace: [String] = []
                #elseif TESTING
                var probe = 0
                #else
                func nothing() {}
                #endif
                #if os(Linux)
                func onlyAFunction() {}
                #endif
            }
            """,
            expandedSource: #"""
                final class Diagnostics {
                    @Observed
                    var name = ""
                    #if DEBUG
                    var trace: [String] = []
                    #elseif TESTING
                    var probe = 0
                    #else
                    func nothing() {}
                    #endif
                    #if os(Linux)
                    func onlyAFunction() {}
                    #endif

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        var table: [String: AnyKeyPath] = [
                            "name": \Diagnostics.name,
                        ]
                        #if DEBUG
                        table["trace"] = \Diagnostics.trace
                        #elseif TESTING
                        table["probe"] = \Diagnostics.probe
                        #else
                        #endif
                        return table
                    }
                }

                extension Diagnostics: KeyValueObservable {
                }
                """#)
    }

    @Test func anOpenClassGetsOpenTables() {
        assertExpansion(
            #"""
            @KeyValueObservable
            open class Document {
                public var title = ""
                @DependsOn(\.title) public var heading: String { title }
            }
            """#,
            expandedSource: #"""
                open class Document {
                    @Observed
                    public var title = ""
                    public var heading: String { title }

                    public let kvoRegistrar = KVORegistrar()

                    open class var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        [
                            \Document.heading: [\Document.title],
                        ]
                    }

                    open class var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "title": \Document.title,
                            "heading": \Document.heading,
                        ]
                    }
                }

                extension Document: KeyValueObservable {
                }
                """#)
    }
    @Test func aDependentKeyOnADeprecatedSourceIsListedWhereNamingItDoesNotWarn() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Legacy {
                var name = ""
                @available(*, deprecated)
                var title = ""
                @DependsOn(\.title) var heading: String { "" }
                @DependsOn(\.name) var upper: String { name.uppercased() }
            }
            """#,
            expandedSource: #"""
                final class Legacy {
                    @Observed
                    var name = ""
                    @available(*, deprecated)
                    @Observed
                    var title = ""
                    var heading: String { "" }
                    var upper: String { name.uppercased() }

                    let kvoRegistrar = KVORegistrar()

                    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        var table: [AnyKeyPath: [AnyKeyPath]] = [
                            \Legacy.upper: [\Legacy.name],
                        ]
                        table.merge(_kvoDependentKeyPathsOfDeprecatedMembers(_KVODeprecatedMembers.self)) { current, _ in
                            current
                        }
                        return table
                    }

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        var table: [String: AnyKeyPath] = [
                            "name": \Legacy.name,
                            "heading": \Legacy.heading,
                            "upper": \Legacy.upper,
                        ]
                        table.merge(_kvoKeyPathsOfDeprecatedMembers(_KVODeprecatedMembers.self)) { current, _ in
                            current
                        }
                        return table
                    }

                    private enum _KVODeprecatedMembers: _KVODeprecatedKeyPaths {
                        @available(*, deprecated, message: "the deprecated members of 'Legacy', named where that does not warn")
                        static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                            [
                                \Legacy.heading: [\Legacy.title],
                            ]
                        }

                        @available(*, deprecated, message: "the deprecated members of 'Legacy', named where that does not warn")
                        static var observableKeyPaths: [String: AnyKeyPath] {
                            [
                                "title": \Legacy.title,
                            ]
                        }
                    }
                }

                extension Legacy: KeyValueObservable {
                }
                """#)
    }

    @Test func deprecatedMembersAreListedWhereNamingThemDoesNotWarn() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Legacy {
                var name = ""
                @available(*, deprecated, renamed: "name")
                var title = ""
            }
            """,
            expandedSource: #"""
                final class Legacy {
                    @Observed
                    var name = ""
                    @available(*, deprecated, renamed: "name")
                    @Observed
                    var title = ""

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        var table: [String: AnyKeyPath] = [
                            "name": \Legacy.name,
                        ]
                        table.merge(_kvoKeyPathsOfDeprecatedMembers(_KVODeprecatedMembers.self)) { current, _ in
                            current
                        }
                        return table
                    }

                    private enum _KVODeprecatedMembers: _KVODeprecatedKeyPaths {
                        @available(*, deprecated, message: "the deprecated members of 'Legacy', named where that does not warn")
                        static var observableKeyPaths: [String: AnyKeyPath] {
                            [
                                "title": \Legacy.title,
                            ]
                        }
                    }
                }

                extension Legacy: KeyValueObservable {
                }
                """#)
    }
}
#endif

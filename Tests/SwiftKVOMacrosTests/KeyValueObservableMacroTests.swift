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
            }
            """,
            expandedSource: #"""
                final class Gauge {
                    @Observed(notifiesAutomatically: false) var level = 0
                    @ObservedArray var readings: [Int] = []

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "level": \Gauge.level,
                            "readings": \Gauge.readings,
                        ]
                    }
                }

                extension Gauge: KeyValueObservable {
                }
                """#)
    }

    @Test func theWrittenTypeDecidesBetweenObservedAndObservedArray() {
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
                    @Observed
                    var e: Set<Int> = []

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "default": \Lists.`default`,
                            "a": \Lists.a,
                            "b": \Lists.b,
                            "c": \Lists.c,
                            "d": \Lists.d,
                            "e": \Lists.e,
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
                @MainActor var title = ""
                weak var delegate: AnyObject?
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
                    @MainActor
                    @Observed var title = ""
                    weak var delegate: AnyObject?
                    func reset() {}

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "count": \Mixed.count,
                            "title": \Mixed.title,
                        ]
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
}
#endif

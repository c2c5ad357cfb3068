#if Macros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Each error the macros report, where it points, and its fix-it.
@Suite struct MacroDiagnosticsTests {
    @Test func aStructIsRefusedAtTheAttribute() {
        assertExpansion(
            """
            @KeyValueObservable
            struct Point {
                var x = 0
            }
            """,
            expandedSource: """
                struct Point {
                    var x = 0
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' applies to classes only; 'Point' is a struct: observation needs one object's identity, and a value of a struct is copied",
                    line: 1, column: 1)
            ])
    }

    @Test func anEnumIsRefusedAtTheAttribute() {
        assertExpansion(
            """
            @KeyValueObservable
            enum Mode {
                case on, off
            }
            """,
            expandedSource: """
                enum Mode {
                    case on, off
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' applies to classes only; 'Mode' is an enum: observation needs one object's identity, and a value of an enum is copied",
                    line: 1, column: 1)
            ])
    }

    @Test func anActorIsRefusedAtTheAttribute() {
        assertExpansion(
            """
            @KeyValueObservable
            actor Bank {
                var total = 0
            }
            """,
            expandedSource: """
                actor Bank {
                    var total = 0
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' applies to classes only; 'Bank' is an actor: an actor's properties are isolated, while observers are called synchronously on the thread that makes a change",
                    line: 1, column: 1)
            ])
    }

    @Test func aProtocolIsRefusedAtTheAttribute() {
        assertExpansion(
            """
            @KeyValueObservable
            protocol Named {
                var name: String { get }
            }
            """,
            expandedSource: """
                protocol Named {
                    var name: String { get }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' applies to classes only; 'Named' is a protocol: apply it to each conforming class instead",
                    line: 1, column: 1)
            ])
    }

    @Test func aLazyPropertyIsRefusedWithAFixItThatIgnoresIt() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Report {
                lazy var text = "…"
            }
            """#,
            expandedSource: #"""
                final class Report {
                    lazy var text = "…"

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [:]
                    }
                }

                extension Report: KeyValueObservable {
                }
                """#,
            diagnostics: [
                DiagnosticSpec(
                    message: "'lazy var text' cannot be observed: its first read stores the value without notifying; mark it '@KVOIgnored', or make it a plain 'var' with an initial value",
                    line: 3, column: 5,
                    fixIts: [FixItSpec(message: "Insert '@KVOIgnored '")])
            ],
            applyFixIts: ["Insert '@KVOIgnored '"],
            fixedSource: #"""
                @KeyValueObservable
                final class Report {
                    @KVOIgnored lazy var text = "…"
                }
                """#)
    }

    @Test func severalPropertiesInOneDeclarationAreRefused() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Pair {
                var first = 0, second = 0
            }
            """,
            expandedSource: """
                final class Pair {
                    var first = 0, second = 0

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [:]
                    }
                }

                extension Pair: KeyValueObservable {
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' observes one property per declaration; declare each 'var' on its own line, or mark this one '@KVOIgnored'",
                    line: 3, column: 5)
            ])
    }

    @Test func aTuplePatternIsRefused() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Pair {
                var (first, second) = (0, 0)
            }
            """,
            expandedSource: """
                final class Pair {
                    var (first, second) = (0, 0)

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [:]
                    }
                }

                extension Pair: KeyValueObservable {
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' cannot observe a tuple pattern; declare each property on its own, or mark this one '@KVOIgnored'",
                    line: 3, column: 5)
            ])
    }

    @Test func aRegistrarOfAnotherShapeIsRefusedWithAFixIt() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Odd {
                var kvoRegistrar = KVORegistrar()
            }
            """,
            expandedSource: """
                final class Odd {
                    var kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [:]
                    }
                }

                extension Odd: KeyValueObservable {
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'kvoRegistrar' is the registrar '@KeyValueObservable' declares; write it as 'let kvoRegistrar = KVORegistrar()', or remove it and let the macro declare it",
                    line: 3, column: 5,
                    fixIts: [FixItSpec(message: "Replace with 'let kvoRegistrar = KVORegistrar()'")])
            ],
            applyFixIts: ["Replace with 'let kvoRegistrar = KVORegistrar()'"],
            fixedSource: """
                @KeyValueObservable
                final class Odd {
                    let kvoRegistrar = KVORegistrar()
                }
                """)
    }

    @Test func aMainActorClassRegistrarSetInInitGetsNonisolatedOnly() {
        assertExpansion(
            """
            @KeyValueObservable @MainActor
            final class Gauge {
                let kvoRegistrar: KVORegistrar
                init() { kvoRegistrar = KVORegistrar() }
            }
            """,
            expandedSource: """
                @MainActor
                final class Gauge {
                    let kvoRegistrar: KVORegistrar
                    init() { kvoRegistrar = KVORegistrar() }

                    nonisolated static var observableKeyPaths: [String: AnyKeyPath] {
                        unsafeIsolatedKeyPaths { @MainActor () -> [String: AnyKeyPath] in
                            [:]
                        }
                    }
                }

                extension Gauge: KeyValueObservable {
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'kvoRegistrar' of a '@MainActor' class is read from any thread; write it as 'nonisolated let kvoRegistrar = KVORegistrar()', or remove it and let the macro declare it",
                    line: 3, column: 5,
                    fixIts: [FixItSpec(message: "Insert 'nonisolated '")])
            ],
            applyFixIts: ["Insert 'nonisolated '"],
            fixedSource: """
                @KeyValueObservable @MainActor
                final class Gauge {
                    nonisolated let kvoRegistrar: KVORegistrar
                    init() { kvoRegistrar = KVORegistrar() }
                }
                """)
    }

    @Test func dependentKeyPathsWrittenByHandBesideDependsOnIsRefused() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Both {
                var name = ""
                @DependsOn(\.name) var upper: String { name.uppercased() }
                static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [:] }
            }
            """#,
            expandedSource: #"""
                final class Both {
                    @Observed
                    var name = ""
                    var upper: String { name.uppercased() }
                    static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] { [:] }

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "name": \Both.name,
                            "upper": \Both.upper,
                        ]
                    }
                }

                extension Both: KeyValueObservable {
                }
                """#,
            diagnostics: [
                DiagnosticSpec(
                    message: "'dependentKeyPaths' is written by hand and '@DependsOn' is used too; declare dependencies in one place: remove this declaration, or the '@DependsOn' attributes",
                    line: 5, column: 5)
            ])
    }

    @Test func dependsOnAStoredPropertyIsRefusedWithAFixIt() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Stored {
                var name = ""
                @DependsOn(\.name) var copy = ""
            }
            """#,
            expandedSource: #"""
                final class Stored {
                    @Observed
                    var name = ""
                    var copy = ""

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "name": \Stored.name,
                        ]
                    }
                }

                extension Stored: KeyValueObservable {
                }
                """#,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@DependsOn' declares what a computed property is computed from; 'copy' is stored and is observed by itself: remove '@DependsOn'",
                    line: 4, column: 5,
                    fixIts: [FixItSpec(message: "Remove '@DependsOn'")])
            ],
            applyFixIts: ["Remove '@DependsOn'"],
            fixedSource: #"""
                @KeyValueObservable
                final class Stored {
                    var name = ""
                    var copy = ""
                }
                """#)
    }

    @Test func dependsOnWithoutSourcesIsRefused() {
        assertExpansion(
            """
            final class Empty {
                @DependsOn() var upper: String { "" }
            }
            """,
            expandedSource: """
                final class Empty {
                    var upper: String { "" }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@DependsOn' needs the key paths 'upper' is computed from, e.g. '@DependsOn(\\.firstName, \\.lastName)'",
                    line: 2, column: 5)
            ])
    }

    @Test func dependsOnAStaticPropertyIsRefused() {
        assertExpansion(
            #"""
            final class Statics {
                @DependsOn(\.name) static var upper: String { "" }
            }
            """#,
            expandedSource: """
                final class Statics {
                    static var upper: String { "" }
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "'@DependsOn' applies to instance properties; 'upper' is static", line: 2, column: 5)
            ])
    }

    @Test func dependsOnSomethingOtherThanAPropertyIsRefused() {
        assertExpansion(
            #"""
            final class Method {
                @DependsOn(\.name) func upper() -> String { "" }
            }
            """#,
            expandedSource: """
                final class Method {
                    func upper() -> String { "" }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@DependsOn' applies to a computed instance property declared with '@KeyValueObservable' ('@DependsOn(\\.name) var summary: String { … }')",
                    line: 2, column: 5)
            ])
    }

    @Test func dependsOnAChainIsRefused() {
        assertExpansion(
            #"""
            final class Portfolio {
                @DependsOn(\.primary.name) var label: String { primary.name }
            }
            """#,
            expandedSource: """
                final class Portfolio {
                    var label: String { primary.name }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@DependsOn' sources are properties of this class or its other dependent keys; '\\.primary.name' reaches through another object, which a dependent key does not follow: depend on its first property, or observe the chain itself",
                    line: 2, column: 16)
            ])
    }

    @Test func dependsOnAnotherClassIsRefused() {
        assertExpansion(
            #"""
            @KeyValueObservable
            final class Label {
                var text = ""
                @DependsOn(\Account.name) var title: String { text }
            }
            """#,
            expandedSource: #"""
                final class Label {
                    @Observed
                    var text = ""
                    var title: String { text }

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "text": \Label.text,
                            "title": \Label.title,
                        ]
                    }
                }

                extension Label: KeyValueObservable {
                }
                """#,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@DependsOn' sources are properties of 'Label'; '\\Account.name' is rooted elsewhere: write it '\\.name'",
                    line: 4, column: 16)
            ])
    }
    @Test func theMacroReappliedOnASubclassIsRefusedWithAFixItThatRemovesIt() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Savings: Account {
                var rate = 0.0
            }
            """,
            expandedSource: """
                final class Savings: Account {
                    @Observed
                    var rate = 0.0
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'Savings' inherits 'KeyValueObservable' from 'Account': remove '@KeyValueObservable'; a subclass inherits it, and declares its own properties with '@Observed', '@ObservedArray' or '@ObservedSet' and its keys by overriding 'observableKeyPaths'",
                    line: 1, column: 1,
                    fixIts: [FixItSpec(message: "Remove '@KeyValueObservable'")])
            ],
            applyFixIts: ["Remove '@KeyValueObservable'"],
            fixedSource: """
                final class Savings: Account {
                    var rate = 0.0
                }
                """,
            alreadyConforming: true)
    }

    @Test func aClassThatConformsThroughObservationBridgedIsNotTakenForASubclass() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Bridged: ObservationBridged {
                let observationRegistrar = ObservationRegistrar()
            }
            """,
            expandedSource: """
                final class Bridged: ObservationBridged {
                    let observationRegistrar = ObservationRegistrar()

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [:]
                    }
                }
                """,
            alreadyConforming: true)
    }

    @Test func aClassThatNamesTheProtocolItselfIsNotTakenForASubclass() {
        assertExpansion(
            """
            @KeyValueObservable
            final class Plain: KeyValueObservable {
                var rate = 0.0
            }
            """,
            expandedSource: #"""
                final class Plain: KeyValueObservable {
                    @Observed
                    var rate = 0.0

                    let kvoRegistrar = KVORegistrar()

                    static var observableKeyPaths: [String: AnyKeyPath] {
                        [
                            "rate": \Plain.rate,
                        ]
                    }
                }
                """#,
            alreadyConforming: true)
    }
    @Test func aLocalClassIsRefusedOnceAndLeftAsWritten() {
        assertExpansion(
            """
            func make() {
                @KeyValueObservable
                final class Local {
                    var count = 0
                }
            }
            """,
            expandedSource: """
                func make() {
                    final class Local {
                        var count = 0
                    }
                }
                """,
            diagnostics: [
                DiagnosticSpec(
                    message: "'@KeyValueObservable' cannot declare the local class 'Local' observable: its conformance is an extension, which a function cannot contain; declare 'Local' outside the function",
                    line: 2, column: 5)
            ])
    }
}
#endif

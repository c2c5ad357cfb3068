#if Macros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// What `@KeyValueObservable` writes for a class isolated to the main actor.
@Suite struct MacroIsolationTests {
    @Test func aMainActorClassHasNonisolatedMembersAndTablesFormedOnTheActor() {
        assertExpansion(
            """
            @KeyValueObservable @MainActor
            final class Badge {
                var count = 0
                @DependsOn(\\.count) var label: String { "\\(count)" }
            }
            """,
            expandedSource: #"""
                @MainActor
                final class Badge {
                    @Observed
                    var count = 0
                    var label: String { "\(count)" }

                    nonisolated let kvoRegistrar = KVORegistrar()

                    nonisolated static var dependentKeyPaths: [AnyKeyPath: [AnyKeyPath]] {
                        unsafeIsolatedDependentKeyPaths { @MainActor () -> [AnyKeyPath: [AnyKeyPath]] in
                            [
                                \Badge.label: [\Badge.count],
                            ]
                        }
                    }

                    nonisolated static var observableKeyPaths: [String: AnyKeyPath] {
                        unsafeIsolatedKeyPaths { @MainActor () -> [String: AnyKeyPath] in
                            [
                                "count": \Badge.count,
                                "label": \Badge.label,
                            ]
                        }
                    }
                }

                extension Badge: KeyValueObservable {
                }
                """#)
    }
}
#endif

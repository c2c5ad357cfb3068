// swift-tools-version:6.1
import CompilerPluginSupport
import PackageDescription

// The `@KeyValueObservable` macro is built only with the package trait "Macros": its
// implementation needs swift-syntax, which nobody who imports SwiftKVO alone should build.
// Depend on the SwiftKVOMacros product with the trait enabled:
//   .package(url: "…/SwiftKVO", from: "…", traits: ["Macros"])
// `make unit` runs the suite with `--traits Macros`; the sanitizer and release runs do not,
// so their scratch folders never build swift-syntax.
let macros: TargetDependencyCondition? = .when(traits: ["Macros"])

// The relay (SwiftKVORelay: PostgreSQL LISTEN/NOTIFY through PostgresNIO) is built only with the
// trait "Relay", and the swift-metrics reporters (SwiftKVOMetrics) only with "Metrics", which
// "Relay" enables. Without them none of PostgresNIO, swift-nio, BoringSSL or swift-metrics is
// compiled: their targets' sources are wrapped in `#if Relay` / `#if Metrics`, and every
// dependency of theirs is conditional on the trait. A service names the product by URL:
//   .package(url: "…/SwiftKVO", from: "…", traits: ["Relay"])
//   .product(name: "SwiftKVORelay", package: "SwiftKVO")
// `make relay-test` builds with `--traits Relay` in a scratch folder of its own (.build-relay).
let relay: TargetDependencyCondition? = .when(traits: ["Relay"])
let metrics: TargetDependencyCondition? = .when(traits: ["Metrics"])

let package = Package(
    name: "SwiftKVO",
    products: [
        .library(name: "CKVOCore", targets: ["CKVOCore"]),
        .library(name: "SwiftKVO", targets: ["SwiftKVO"]),
        // `@KeyValueObservable` and SwiftKVO in one import (enable the trait "Macros").
        .library(name: "SwiftKVOMacros", targets: ["SwiftKVOMacros"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
        // Relays notifications and properties between instances (enable the trait "Relay").
        .library(name: "SwiftKVORelay", targets: ["SwiftKVORelay"]),
        // The engine's statistics as swift-metrics gauges (enable "Metrics", or "Relay").
        .library(name: "SwiftKVOMetrics", targets: ["SwiftKVOMetrics"]),
    ],
    traits: [
        .trait(
            name: "Macros",
            description: "Builds the @KeyValueObservable macro (SwiftKVOMacros) and with it swift-syntax."),
        .trait(
            name: "Metrics",
            description: "Builds SwiftKVOMetrics, which reports the engine's statistics through swift-metrics."),
        .trait(
            name: "Relay",
            description:
                "Builds SwiftKVORelay (PostgreSQL LISTEN/NOTIFY through PostgresNIO, a swift-service-lifecycle Service, swift-metrics) and with it SwiftNIO and BoringSSL.",
            enabledTraits: ["Metrics"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"604.0.0"),
        // Metrics and Relay only.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Relay only.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // HMAC-SHA256 for signed messages; PostgresNIO builds it already.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // Concurrency Kit from the system (Debian: libck-dev; `make deps` installs it).
        // (No pkgConfig: ck.pc only adds -D__x86_64__, which SwiftPM rejects with a warning.)
        .systemLibrary(
            name: "CCK",
            path: "Sources/CCK",
            providers: [.apt(["libck-dev"])]
        ),
        // The C engine: observer tables in ck_hs, read lock-free under ck_epoch.
        .target(
            name: "CKVOCore",
            dependencies: ["CCK"],
            path: "Sources/CKVOCore",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("ck"), .linkedLibrary("pthread")]
        ),
        // The Swift layer: every call into CKVOCore goes through Sources/SwiftKVO/Engine/Engine.swift;
        // Sources/SwiftKVO/Runtime holds every read of a layout Swift does not promise.
        .target(
            name: "SwiftKVO",
            dependencies: ["CKVOCore"],
            path: "Sources/SwiftKVO"
        ),
        // The macro's implementation: a compiler plugin, one file per macro (Macros trait only;
        // without it the target is an empty stub, so a plain build never compiles swift-syntax).
        .macro(
            name: "SwiftKVOMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax", condition: macros),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax", condition: macros),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax", condition: macros),
                .product(name: "SwiftDiagnostics", package: "swift-syntax", condition: macros),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax", condition: macros),
            ],
            path: "Sources/SwiftKVOMacrosPlugin"
        ),
        // The macro's public face: declares the macros and re-exports SwiftKVO.
        .target(
            name: "SwiftKVOMacros",
            dependencies: ["SwiftKVO", .target(name: "SwiftKVOMacrosPlugin", condition: macros)],
            path: "Sources/SwiftKVOMacros"
        ),
        // Expansions and diagnostics of the macro, and classes declared by macro against their
        // hand-written twins (empty without the trait).
        .testTarget(
            name: "SwiftKVOMacrosTests",
            dependencies: [
                "SwiftKVOMacros",
                .target(name: "SwiftKVOMacrosPlugin", condition: macros),
                .target(name: "SwiftKVOMacroFixtures", condition: macros),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax", condition: macros),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax", condition: macros),
            ],
            path: "Tests/SwiftKVOMacrosTests"
        ),
        // Macro classes of a module of their own, which SwiftKVOMacrosTests subclasses: a table that
        // cannot be overridden from another module fails to compile there.
        .target(
            name: "SwiftKVOMacroFixtures",
            dependencies: ["SwiftKVOMacros"],
            path: "Tests/SwiftKVOMacroFixtures"
        ),
        // A malloc-counting shim for SwiftKVOTests' allocation test (interposes malloc & co.).
        .target(
            name: "SwiftKVOTestSupport",
            path: "Tests/SwiftKVOTestSupport"
        ),
        // Runs one test in a process of its own (memory-bound tests measure the whole process).
        .target(name: "IsolatedRunSupport", path: "Tests/IsolatedRunSupport"),
        .testTarget(
            name: "SwiftKVOTests",
            dependencies: ["SwiftKVO", "CKVOCore", "SwiftKVOTestSupport", "IsolatedRunSupport"],
            path: "Tests/SwiftKVOTests"
        ),
        // The README's Swift quick start, run by `make quickstart`.
        .executableTarget(name: "QuickStart", dependencies: ["SwiftKVO"], path: "examples/QuickStart"),
        // The same, declared with @KeyValueObservable (`make quickstart`, with the Macros trait).
        .executableTarget(
            name: "QuickStartMacro", dependencies: ["SwiftKVOMacros"], path: "examples/QuickStartMacro"),
        // C helpers for CKVOCoreTests: recording callbacks, atomics, barriers, fork, pthread_exit.
        // SwiftKVOTestSupport's malloc shim also keeps the byte ledger the held-memory tests read.
        .target(
            name: "CKVOTestSupport", dependencies: ["CKVOCore", "SwiftKVOTestSupport"],
            path: "Tests/CKVOTestSupport"),
        .testTarget(
            name: "CKVOCoreTests", dependencies: ["CKVOCore", "CKVOTestSupport", "IsolatedRunSupport"],
            path: "Tests/CKVOCoreTests"),
        // Benchmarks (SPEC.md §5): `swift run -c release Benchmarks`. The C floor and the C
        // callback the SwiftKVO C API peer registers live in their own tiny C target.
        .target(
            name: "CBenchFloor",
            dependencies: ["CKVOCore"],
            path: "Benchmarks/CFloor"
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "CBenchFloor",
                "CKVOCore",
                "SwiftKVO",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            path: "Benchmarks",
            exclude: ["CFloor", "README.md"]
        ),
        // `make perf-check`: fixed-iteration fixtures of the hot operations, whose instructions
        // and allocations per operation are counted under callgrind (Tests/PerfCheck/README.md).
        .target(
            name: "CPerfCheck", dependencies: ["CKVOCore", "SwiftKVOTestSupport"],
            path: "Tests/PerfCheck/CSupport"),
        .executableTarget(
            name: "PerfCheck", dependencies: ["CKVOCore", "CPerfCheck", "SwiftKVO"],
            path: "Tests/PerfCheck",
            exclude: ["CSupport", "README.md", "perf_check.py", "baseline.tsv"]),
        // The soak test (`make soak`): every workload at once for a bounded time, with exact
        // accounting. Its C helpers (self-checking callbacks, the event clock) are a target of their own.
        .target(name: "CSoakSupport", dependencies: ["CKVOCore"], path: "Tests/Soak/CSupport"),
        .executableTarget(
            name: "Soak",
            dependencies: [
                "CKVOCore",
                "CSoakSupport",
                "SwiftKVO",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/Soak",
            exclude: ["CSupport"]
        ),
    
        // SwiftKVOMetrics: the engine's statistics as gauges, reported by a Service (trait Metrics).
        .target(
            name: "SwiftKVOMetrics",
            dependencies: [
                "SwiftKVO",
                .product(name: "Metrics", package: "swift-metrics", condition: metrics),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: metrics),
            ],
            path: "Sources/SwiftKVOMetrics"
        ),
        .testTarget(
            name: "SwiftKVOMetricsTests",
            dependencies: [
                "SwiftKVOMetrics",
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: metrics),
            ],
            path: "Tests/SwiftKVOMetricsTests"
        ),
        // SwiftKVORelay and what belongs to it (trait Relay; each file is `#if Relay`).
        .target(
            name: "SwiftKVORelay",
            dependencies: [
                "SwiftKVO",
                .target(name: "SwiftKVOMetrics", condition: relay),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: relay),
                .product(name: "Logging", package: "swift-log", condition: relay),
                .product(name: "NIOCore", package: "swift-nio", condition: relay),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: relay),
                .product(name: "DequeModule", package: "swift-collections", condition: relay),
                .product(name: "Crypto", package: "swift-crypto", condition: relay),
                .product(name: "Metrics", package: "swift-metrics", condition: relay),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: relay),
            ],
            path: "Sources/SwiftKVORelay"
        ),
        // `make relay-bench`: the relay against raw PostgresNIO LISTEN/NOTIFY.
        .executableTarget(
            name: "RelayBenchmarks",
            dependencies: [
                .target(name: "SwiftKVORelay", condition: relay),
                "SwiftKVO",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: relay),
                .product(name: "Logging", package: "swift-log", condition: relay),
                .product(name: "NIOCore", package: "swift-nio", condition: relay),
                .product(name: "Histogram", package: "hdrhistogram-swift", condition: relay),
            ],
            path: "Sources/RelayBenchmarks"
        ),
        // The README's two-instance example, run as a Service (`make relay-example`).
        .executableTarget(
            name: "RelayExample",
            dependencies: [
                .target(name: "SwiftKVORelay", condition: relay),
                "SwiftKVO",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: relay),
                .product(name: "Logging", package: "swift-log", condition: relay),
            ],
            path: "examples/RelayExample"
        ),
        // The second process of the two-process test (SwiftKVORelayTests starts it).
        .executableTarget(
            name: "RelayTestPeer",
            dependencies: [
                .target(name: "SwiftKVORelay", condition: relay),
                .product(name: "Logging", package: "swift-log", condition: relay),
            ],
            path: "Tests/RelayTestPeer"
        ),
        // make relay-fuzz: seeded random bytes and hostile message sequences through the receive path.
        .executableTarget(
            name: "RelayFuzz",
            dependencies: [.target(name: "SwiftKVORelay", condition: relay), "SwiftKVO"],
            path: "Tests/RelayFuzz"
        ),
        .testTarget(
            name: "SwiftKVORelayTests",
            dependencies: [
                .target(name: "SwiftKVORelay", condition: relay),
                "SwiftKVO",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: relay),
                .product(name: "Logging", package: "swift-log", condition: relay),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: relay),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: relay),
            ],
            path: "Tests/SwiftKVORelayTests"
        ),
    ]
)

// `make docs` (SWIFTKVO_DOCS=1): swift-docc-plugin, for `swift package generate-documentation`.
// Only then: SwiftPM would otherwise compile its command plugins in every build of this package.
if Context.environment["SWIFTKVO_DOCS"] == "1" {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

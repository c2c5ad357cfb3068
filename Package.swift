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

let package = Package(
    name: "SwiftKVO",
    products: [
        .library(name: "CKVOCore", targets: ["CKVOCore"]),
        .library(name: "SwiftKVO", targets: ["SwiftKVO"]),
        // `@KeyValueObservable` and SwiftKVO in one import (enable the trait "Macros").
        .library(name: "SwiftKVOMacros", targets: ["SwiftKVOMacros"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
    ],
    traits: [
        .trait(
            name: "Macros",
            description: "Builds the @KeyValueObservable macro (SwiftKVOMacros) and with it swift-syntax."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"604.0.0"),
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
        // The Swift layer: every call into CKVOCore goes through Sources/SwiftKVO/Engine.swift.
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
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax", condition: macros),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax", condition: macros),
            ],
            path: "Tests/SwiftKVOMacrosTests"
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
            dependencies: ["SwiftKVO", "SwiftKVOTestSupport", "IsolatedRunSupport"],
            path: "Tests/SwiftKVOTests"
        ),
        // The README's Swift quick start, run by `make quickstart`.
        .executableTarget(name: "QuickStart", dependencies: ["SwiftKVO"], path: "examples/QuickStart"),
        // The same, declared with @KeyValueObservable (`make quickstart`, with the Macros trait).
        .executableTarget(
            name: "QuickStartMacro", dependencies: ["SwiftKVOMacros"], path: "examples/QuickStartMacro"),
        // C helpers for CKVOCoreTests: recording callbacks, atomics, barriers, fork, pthread_exit.
        .target(name: "CKVOTestSupport", dependencies: ["CKVOCore"], path: "Tests/CKVOTestSupport"),
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
    ]
)

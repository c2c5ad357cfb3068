// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SwiftKVO",
    products: [
        .library(name: "CKVOCore", targets: ["CKVOCore"]),
        .library(name: "SwiftKVO", targets: ["SwiftKVO"]),
        .executable(name: "Benchmarks", targets: ["Benchmarks"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
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

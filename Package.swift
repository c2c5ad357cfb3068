// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SwiftKVO",
    products: [
        .library(name: "CKVOCore", targets: ["CKVOCore"]),
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
        // C helpers for CKVOCoreTests: recording callbacks, atomics, barriers, fork, pthread_exit.
        .target(name: "CKVOTestSupport", dependencies: ["CKVOCore"], path: "Tests/CKVOTestSupport"),
        .testTarget(name: "CKVOCoreTests", dependencies: ["CKVOCore", "CKVOTestSupport"], path: "Tests/CKVOCoreTests"),
    ]
)

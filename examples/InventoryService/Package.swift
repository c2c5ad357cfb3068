// swift-tools-version:6.1
import PackageDescription

// A Hummingbird 2 service replicating an inventory between its instances with SwiftKVORelay
// (`make service-example`). A package of its own so that users of SwiftKVO never fetch
// Hummingbird: it names the repository's package by path, with the traits Relay and Macros.
let package = Package(
    name: "InventoryService",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so that `package: "SwiftKVO"` below holds in any checkout: a package by path is
        // otherwise known by its folder's name.
        .package(name: "SwiftKVO", path: "../..", traits: ["Relay", "Macros"]),
        // Without its default traits: no swift-configuration to build.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
    ],
    targets: [
        .executableTarget(
            name: "InventoryService",
            dependencies: [
                .product(name: "SwiftKVOMacros", package: "SwiftKVO"),
                .product(name: "SwiftKVORelay", package: "SwiftKVO"),
                .product(name: "SwiftKVOMetrics", package: "SwiftKVO"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)

// swift-tools-version:6.0
import PackageDescription

// The relay is a package of its own so that the core package (one folder up) never builds
// PostgresNIO, swift-nio or BoringSSL: `swift test` at the root stays as fast as it was.
let package = Package(
    name: "SwiftKVORelay",
    products: [
        .library(name: "SwiftKVORelay", targets: ["SwiftKVORelay"]),
        .executable(name: "RelayBenchmarks", targets: ["RelayBenchmarks"]),
        .executable(name: "RelayExample", targets: ["RelayExample"]),
        .executable(name: "RelayFuzz", targets: ["RelayFuzz"]),
    ],
    dependencies: [
        .package(name: "SwiftKVO", path: ".."),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // HMAC-SHA256 for signed messages; PostgresNIO builds it already.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(
            name: "SwiftKVORelay",
            dependencies: [
                .product(name: "SwiftKVO", package: "SwiftKVO"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "RelayBenchmarks",
            dependencies: [
                "SwiftKVORelay",
                .product(name: "SwiftKVO", package: "SwiftKVO"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // The README's two-instance example.
        .executableTarget(
            name: "RelayExample",
            dependencies: ["SwiftKVORelay", .product(name: "SwiftKVO", package: "SwiftKVO")],
            path: "Examples/RelayExample"
        ),
        // The second process of the two-process test (SwiftKVORelayTests starts it).
        .executableTarget(
            name: "RelayTestPeer",
            dependencies: ["SwiftKVORelay", .product(name: "Logging", package: "swift-log")],
            path: "Tests/RelayTestPeer"
        ),
        // make relay-fuzz: seeded random bytes and hostile message sequences through the receive path.
        .executableTarget(
            name: "RelayFuzz",
            dependencies: ["SwiftKVORelay", .product(name: "SwiftKVO", package: "SwiftKVO")],
            path: "Tests/RelayFuzz"
        ),
        .testTarget(
            name: "SwiftKVORelayTests",
            dependencies: [
                "SwiftKVORelay",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)

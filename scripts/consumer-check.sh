#!/usr/bin/env bash
# make consumer-check: SwiftKVO as a service's Package.swift names it — by URL.
#
#   scripts/consumer-check.sh REPOSITORY WORK_FOLDER
#
# Clones REPOSITORY's committed HEAD into WORK_FOLDER (a file:// URL, tagged 99.0.0 there)
# and builds two packages that depend on it by `.package(url:from:)`:
#   core/   the product SwiftKVO without traits: its verbose build log must name none of
#           PostgresNIO, swift-nio, BoringSSL, swift-crypto, swift-metrics or ServiceLifecycle,
#           and none of those packages may even be fetched;
#   relay/  `traits: ["Relay"]` and the product SwiftKVORelay: builds examples/RelayExample
#           (the README's relay example) and runs it against the server PGHOST/PGPORT name.
# Each build's log stays in WORK_FOLDER for reading.
set -euo pipefail
repository=$(cd "$1" && pwd)
work=$2
swift=${SWIFT:-swift}

rm -rf "$work"
mkdir -p "$work"
git clone -q "file://$repository" "$work/SwiftKVO"
git -C "$work/SwiftKVO" tag -f 99.0.0 >/dev/null
url="file://$work/SwiftKVO"
echo "SwiftKVO at $url (commit $(git -C "$work/SwiftKVO" rev-parse --short HEAD), tagged 99.0.0)"

# Modules that belong to the relay's dependencies and must not be built without the trait.
forbidden='PostgresNIO|NIOCore|NIOPosix|NIOSSL|CNIOBoringSSL|Crypto|CoreMetrics|ServiceLifecycle|SwiftKVORelay|SwiftKVOMetrics'

# --- without the trait ------------------------------------------------------------------
mkdir -p "$work/core/Sources/Core"
cat > "$work/core/Package.swift" <<MANIFEST
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Core",
    dependencies: [.package(url: "$url", from: "99.0.0")],
    targets: [
        .executableTarget(name: "Core", dependencies: [.product(name: "SwiftKVO", package: "SwiftKVO")])
    ]
)
MANIFEST
# The README's Swift quick start.
cp "$repository/examples/QuickStart/main.swift" "$work/core/Sources/Core/main.swift"
echo "== consumer without traits: swift build -v (log: $work/core/build.log)"
(cd "$work/core" && "$swift" build -v > build.log 2>&1) || { tail -40 "$work/core/build.log"; exit 1; }
modules=$(grep -oE -- '-module-name [A-Za-z0-9_]+' "$work/core/build.log" | awk '{print $2}' | sort -u | tr '\n' ' ')
echo "modules compiled: $modules"
echo "packages fetched: $(ls "$work/core/.build/checkouts" | tr '\n' ' ')"
if grep -qE -- "-module-name ($forbidden)\b" "$work/core/build.log"; then
    echo "FAIL: the build without the trait compiled a relay dependency:"
    grep -oE -- "-module-name ($forbidden)\b" "$work/core/build.log" | sort -u
    exit 1
fi
if ls "$work/core/.build/checkouts" | grep -qiE 'postgres-nio|swift-nio|swift-metrics|service-lifecycle|swift-crypto'; then
    echo "FAIL: the build without the trait fetched a relay dependency"
    exit 1
fi
(cd "$work/core" && "$swift" run --skip-build Core > run.log 2>&1) || { cat "$work/core/run.log"; exit 1; }
echo "ok: no PostgresNIO, swift-nio, BoringSSL, swift-crypto, swift-metrics or ServiceLifecycle module built or fetched; the quick start ran"

# --- with the trait ---------------------------------------------------------------------
mkdir -p "$work/relay/Sources/RelayExample"
cat > "$work/relay/Package.swift" <<MANIFEST
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Service",
    dependencies: [
        .package(url: "$url", from: "99.0.0", traits: ["Relay"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "RelayExample",
            dependencies: [
                .product(name: "SwiftKVO", package: "SwiftKVO"),
                .product(name: "SwiftKVORelay", package: "SwiftKVO"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        )
    ]
)
MANIFEST
# The example without its `#if Relay` guard (a trait's condition is its own package's).
grep -vE '^#(if Relay|endif)$' "$repository/examples/RelayExample/main.swift" > "$work/relay/Sources/RelayExample/main.swift"
echo "== consumer with traits: [\"Relay\"]: swift build -v (log: $work/relay/build.log)"
(cd "$work/relay" && "$swift" build -v > build.log 2>&1) || { tail -40 "$work/relay/build.log"; exit 1; }
for module in PostgresNIO SwiftKVORelay SwiftKVOMetrics; do
    grep -qE -- "-module-name $module\b" "$work/relay/build.log" || { echo "FAIL: $module was not built"; exit 1; }
done
echo "ok: PostgresNIO, SwiftKVORelay and SwiftKVOMetrics built"
echo "== consumer with the trait: run RelayExample against PGHOST=${PGHOST:-} PGPORT=${PGPORT:-}"
printf 'order 7\ncheckout on\n' | (cd "$work/relay" && PGSSLMODE=disable timeout 120 "$swift" run --skip-build RelayExample) \
    > "$work/relay/run.log" 2>&1 || { cat "$work/relay/run.log"; exit 1; }
cat "$work/relay/run.log"
grep -q "^listening as " "$work/relay/run.log" || { echo "FAIL: the example did not listen"; exit 1; }
for line in "order 7 placed here" "checkout is on" "stopped: 0 message(s) not sent"; do
    grep -qxF "$line" "$work/relay/run.log" || { echo "FAIL: the example did not print \"$line\""; exit 1; }
done
echo "ok: the relay example built from the URL ran, and shut down with its queue sent"

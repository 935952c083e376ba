// swift-tools-version: 6.2
import PackageDescription

// One-way dependencies, bottom to top:
//   JSONRPC (wire types) <- StripeAPI (pure: encoding, errors, retries, models) <- StripeHTTP (AsyncHTTPClient)
//   JSONRPC, StripeAPI <- StpdProtocol (the method declarations = the contract)
//   RPCTransport (NIO framing, server, client) <- StpdDaemon <- stpd
//   StpdProtocol, StripeAPI <- StpdCore (pure domain, no I/O) <- StpdStore (SQLite) <- StpdDaemon
//   StpdCore, StpdStore (its StateSealer) <- StpdPostgres (a fleet's shared PostgreSQL store and leases) <- StpdDaemon
//   StpdCore, StripeHTTP <- StpdBackends (the merchant's backend over HTTP) <- StpdDaemon
//   stpctl (with StpctlKit, its testable logic) uses StpdProtocol + RPCTransport (+ StripeAPI's
//   types in StpdProtocol's params) only.
//   StripeTestServer / stripe-test-server: the project's own Stripe stand-in for tests.
// A target declares every module it imports: scripts/check-imports (make lint) fails otherwise.
let package = Package(
    name: "stpd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "stpd", targets: ["stpd"]),
        .executable(name: "stpctl", targets: ["stpctl"]),
        // For the micro-benchmarks' own package (bench/micro/Package.swift, by path): the modules
        // of the hot paths. Not an API for anyone else.
        .library(name: "StpdInternals", targets: ["JSONRPC", "StpdProtocol", "StpdCore", "StpdStore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .target(name: "JSONRPC"),
        // The states both the domain stores and the contract shows (docs/architecture.md).
        .target(name: "StpdValues"),
        .target(name: "StpdProtocol", dependencies: ["JSONRPC", "StripeAPI", "StpdValues"]),
        .target(
            name: "RPCTransport",
            dependencies: [
                "JSONRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "StpdCore",
            dependencies: [
                "StpdValues", "StripeAPI", "JSONRPC",
                .product(name: "HeapModule", package: "swift-collections"),
                // A loopback return's token is filed under its SHA-256 (LoopbackReturn).
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .target(
            name: "StpdStore",
            dependencies: [
                "StpdCore", "JSONRPC",
                .product(name: "GRDB", package: "GRDB.swift"),
                // Seals secrets in object state at rest (StateSealer).
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The fleet's store: several daemons on one PostgreSQL database (STPD_DATABASE_URL), with
        // leases for the background work. The daemon picks it only when that URL is set. It seals
        // state with StpdStore's StateSealer, and runs its pool as a service of the daemon's group.
        .target(
            name: "StpdPostgres",
            dependencies: [
                "StpdCore", "StpdStore", "JSONRPC",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .target(
            name: "StpdDaemon",
            dependencies: [
                "StpdBackends",
                "CSystemd", "JSONRPC", "StpdProtocol", "RPCTransport", "StpdCore", "StpdStore", "StpdPostgres",
                "StripeAPI", "StripeHTTP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The loopback return's listener (LoopbackServer).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // daemon.metrics: instruments through swift-metrics, read out by swift-prometheus.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "stpd",
            dependencies: [
                "StpdDaemon", "StpdProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "stpctl",
            dependencies: [
                "JSONRPC", "StpdProtocol", "RPCTransport", "StripeAPI",
                "StpctlKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // stpctl's pure logic (params parsing, socket path, exit statuses), kept apart to be tested.
        .target(
            name: "StpctlKit",
            dependencies: [
                "JSONRPC", "RPCTransport", "StripeAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "StpctlTests",
            dependencies: [
                "StpctlKit", "JSONRPC", "RPCTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "StpdDaemonTests",
            dependencies: [
                "StpdDaemon", "StpdCore", "StpdProtocol", "JSONRPC", "StripeAPI", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Test helpers shared by the test targets: raw sockets, gates, a test RPCServer, and a
        // real stpd process started with a NOTIFY_SOCKET.
        .target(
            name: "TestSupport",
            dependencies: [
                "JSONRPC", "RPCTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/TestSupport"
        ),
        // StpdProtocol and StripeAPI for the source constructors' schemas.
        .testTarget(name: "JSONRPCTests", dependencies: ["JSONRPC", "StpdProtocol", "StripeAPI"]),
        .testTarget(
            name: "TransportTests",
            dependencies: [
                "RPCTransport", "JSONRPC", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "ContractTests",
            dependencies: [
                "StpdProtocol", "StpdDaemon", "JSONRPC", "StpdCore", "StpdStore", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["TestSupport", "RPCTransport", "JSONRPC", "StpdProtocol"]
        ),
        // The StateStore contract runs against every store, hence StpdStore and StpdPostgres (and
        // PostgresNIO, to make a scratch database per test). No daemon target: these tests assert the
        // domain's errors; their wire codes are checked in StpdDaemonTests.
        .testTarget(
            name: "StpdCoreTests",
            dependencies: [
                "StpdCore", "StpdStore", "StpdPostgres", "StpdProtocol", "StpdValues", "StripeAPI", "JSONRPC",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // TestSupport for its bind lock: one test changes the process-wide umask.
        .testTarget(
            name: "StpdStoreTests",
            dependencies: [
                "StpdStore", "StpdCore", "StpdProtocol", "StpdValues", "JSONRPC", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        // The Stripe API's pure layer: form encoding, headers, errors, retries, redaction, and a
        // client over an injected HTTP transport (StripeHTTP's AsyncHTTPClient transport in the daemon).
        .target(name: "StripeAPI", dependencies: ["JSONRPC"]),
        .testTarget(name: "StripeAPITests", dependencies: ["StripeAPI", "JSONRPC"]),
        // The project's own Stripe API test server (in-memory, fault injection, request log),
        // as a library for in-process tests and as the `stripe-test-server` executable.
        .target(
            name: "StripeTestServer",
            dependencies: [
                "JSONRPC", "StripeAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "stripe-test-server",
            dependencies: [
                "StripeTestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "StripeTestServerTests",
            dependencies: [
                "StripeTestServer", "stripe-test-server", "StripeAPI", "StripeHTTP", "JSONRPC", "TestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The AsyncHTTPClient transport under StripeClient.
        .target(
            name: "StripeHTTP",
            dependencies: [
                "StripeAPI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // Only to tell a lost connection or an unreachable network from other faults.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "StripeHTTPTests",
            dependencies: [
                "StripeHTTP", "StripeAPI", "JSONRPC", "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Customer backends over HTTP to the merchant's own server: MerchantBackend (the adapter's
        // REST routes) and BackendKeyProvider (the ephemeral-key endpoint).
        .target(
            name: "StpdBackends",
            dependencies: [
                "StpdCore", "StripeAPI", "StripeHTTP", "JSONRPC",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .testTarget(
            name: "StpdBackendsTests",
            dependencies: [
                "StpdBackends", "StpdCore", "StripeAPI", "StripeHTTP", "JSONRPC", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ]
)

// Warnings are errors in the project's own targets, in every build, so that a developer sees what
// CI sees; SwiftPM silences remote dependencies, whose warnings are not ours to fix. STPD_WERROR=0
// turns it off (a compiler newer than the project's that warns about more).
if Context.environment["STPD_WERROR"] != "0" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
    }
}

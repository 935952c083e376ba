// swift-tools-version: 6.1
import PackageDescription

// Micro-benchmarks of stpd's hot paths (`make bench-micro`), with ordo-one's package-benchmark.
// A package of their own, depending on stpd's by path, so that `make test` never builds the
// benchmark plugin. The benchmark targets live under Benchmarks/, where the plugin looks for them.
let package = Package(
    name: "stpd-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "stpd", path: "../.."),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
    ],
    targets: [
        .executableTarget(
            name: "HotPaths",
            dependencies: [
                .product(name: "Benchmark", package: "package-benchmark"),
                .product(name: "StpdInternals", package: "stpd"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
            ],
            path: "Benchmarks/HotPaths",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        )
    ]
)

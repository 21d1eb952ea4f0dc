// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "motiond",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MotionCore", targets: ["MotionCore"]),
        .library(name: "MotionDevices", targets: ["MotionDevices"]),
        .library(name: "MotionFusion", targets: ["MotionFusion"]),
        .library(name: "MotionWire", targets: ["MotionWire"]),
        .library(name: "MotionClient", targets: ["MotionClient"]),
        .library(name: "MotionClientCore", targets: ["MotionClientCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(name: "MotionCore"),
        .target(name: "MotionFusion", dependencies: ["MotionCore"]),
        .target(name: "MotionWire", dependencies: ["MotionCore", "CZlib"]),  // CZlib: gzip-compressed recordings
        // The client's connection (`MotionClient`, `LineConnection`): FoundationEssentials only, so that
        // motionctl links no ICU. `MotionClient` adds the CoreMotion-shaped API (OperationQueue: Foundation).
        .target(name: "MotionClientCore", dependencies: ["MotionWire", "MotionCore", "MotionSystem"]),
        .target(name: "MotionClient", dependencies: ["MotionClientCore", "MotionWire", "MotionCore"]),
        // The hub core: sensors run while someone listens, captures, fusion pipeline, fan-out, calibration
        // keeping. No socket, bus, broker or file format: the front ends below are its clients. NIOPosix
        // for the pipe channels that read its captures' descriptors on the loop (docs/architecture.md).
        .target(
            name: "MotionHub",
            dependencies: [
                "MotionCore", "MotionWire", "MotionFusion", "MotionDevices", "MotionSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The front ends, one target each, each a client of the hub and a part of the daemon's ServiceGroup.
        .target(
            name: "MotionSocketServer",
            dependencies: [
                "MotionHub", "MotionWire", "MotionSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The only target that links sd-bus.
        .target(
            name: "MotionDBus",
            dependencies: [
                "MotionHub", "MotionWire", "MotionCore", "MotionDevices", "MotionSystem", "CSDBus",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The only target that links libmosquitto.
        .target(
            name: "MotionMQTT",
            dependencies: [
                "MotionHub", "MotionConfiguration", "MotionWire", "MotionSystem", "CMosquitto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        // The only target that links zlib (the DSU packets' CRC-32).
        // Front end: a tablet-mode switch (uinput) from the hinge, where the kernel reports none.
        .target(
            name: "MotionTabletMode",
            dependencies: [
                "MotionHub", "MotionWire", "MotionCore", "MotionDevices", "MotionFusion",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "MotionDSU",
            dependencies: [
                "MotionHub", "MotionConfiguration", "MotionWire", "MotionCore", "MotionDevices", "MotionSystem", "CZlib",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(
            name: "MotionMetrics",
            dependencies: [
                "MotionHub", "MotionCore", "MotionWire", "MotionDevices", "MotionSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        // motiond.conf: the only target that links libyaml.
        .target(
            name: "MotionConfiguration",
            dependencies: ["MotionCore", "MotionWire", "MotionDevices", "MotionSystem", "CYAML", .product(name: "Logging", package: "swift-log")]),
        // The composition: the hub and the front ends as Services of one ServiceGroup, logging (to the
        // journal natively: sd-journal, so libsystemd), systemd.
        .target(
            name: "MotionDaemon",
            dependencies: [
                "MotionHub", "MotionSocketServer", "MotionDBus", "MotionMQTT", "MotionDSU", "MotionMetrics", "MotionTabletMode",
                "MotionConfiguration", "MotionDevices", "MotionSystem", "MotionWire", "CConcurrencyHook", "CSDBus",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The Swift runtime's global-job hook, for `ConcurrencyOnNIO`.
        .systemLibrary(name: "CConcurrencyHook"),
        .systemLibrary(
            name: "CLibIIO", pkgConfig: "libiio",
            providers: [.apt(["libiio-dev"])]),
        .systemLibrary(
            name: "CLibUdev", pkgConfig: "libudev",
            providers: [.apt(["libudev-dev"])]),
        .systemLibrary(
            name: "CSDBus", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CYAML", pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]),
        // libmosquitto's header, its library opened at run time (dlopen) once MQTT is configured.
        .target(name: "CMosquitto", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "MotionDevices", dependencies: ["MotionCore", "MotionSystem", "CLibIIO", "CLibUdev"]),
        // The one syscall layer: thin typed wrappers on swift-system.
        .target(name: "MotionSystem", dependencies: ["CLinux", .product(name: "SystemPackage", package: "swift-system")]),
        .systemLibrary(name: "CLinux"),

        .executableTarget(
            name: "motiond",
            dependencies: [
                "MotionDaemon", "MotionConfiguration", "MotionHub", "MotionDevices", "MotionSystem", "MotionWire",
                // Called as `motionctl` (the package's link to motiond), motiond runs motionctl.
                "MotionCtlCommands",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // A developer's look at the device layer, without the daemon.
        .executableTarget(
            name: "motion-probe",
            dependencies: [
                "MotionDevices", "MotionCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // motionctl's commands, a library: the `motiond` executable is also `motionctl` when called by
        // that name (one copy of the Swift runtime in the package: issue 63).
        .target(
            name: "MotionCtlCommands",
            dependencies: [
                "MotionFusion", "MotionCore", "MotionClientCore", "MotionSystem", "MotionDevices",
                // The mount wizard reads motiond.conf with motiond's own loader before and after its edit.
                "MotionConfiguration",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `motionctl view`'s web server.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/motionctl"),
        // motionctl on its own, for development and the tests that run `.build/debug/motionctl`; the
        // package installs `motionctl` as a link to `motiond` instead.
        .executableTarget(name: "motionctl", dependencies: ["MotionCtlCommands"], path: "Sources/MotionctlMain"),

        // Test support: umockdev's testbed API, used only by the tests.
        .systemLibrary(
            name: "CUMockdev", pkgConfig: "umockdev-1.0",
            providers: [.apt(["libumockdev-dev", "umockdev"])]),

        .testTarget(name: "MotionCoreTests", dependencies: ["MotionCore"]),
        .testTarget(name: "MotionSystemTests", dependencies: ["MotionSystem"]),
        .testTarget(name: "MotionWireTests", dependencies: ["MotionWire", "MotionCore"]),
        .testTarget(name: "MotionctlTests", dependencies: ["MotionCtlCommands", "motionctl", "motiond", "MotionFusion", "MotionCore", "MotionClient", "MotionConfiguration", "MotionDevices", "TestSupport"]),
        .testTarget(name: "MotionClientTests", dependencies: ["MotionClient", "motiond", "TestSupport"]),
        .testTarget(name: "InstallTests", dependencies: ["motiond", "motionctl", "TestSupport"]),
        .testTarget(
            name: "MotionHubTests",
            dependencies: [
                "MotionHub", "MotionWire", "MotionCore", "MotionFusion", "MotionDevices", "MotionSystem", "TestSupport", "HubTestKit",
                // The tablet-mode front end's rules, on the kit's convertible.
                "MotionTabletMode",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "MotionDBusTests",
            dependencies: [
                "MotionDBus", "MotionHub", "MotionWire", "MotionCore", "MotionDevices", "MotionSystem", "TestSupport", "HubTestKit", "motiond", "CSDBus",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "MotionMQTTTests",
            dependencies: [
                "MotionMQTT", "MotionHub", "MotionConfiguration", "MotionWire", "MotionCore", "MotionClient", "TestSupport", "motiond",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "MotionDSUTests",
            dependencies: [
                "MotionDSU", "MotionHub", "MotionConfiguration", "MotionDaemon", "MotionWire", "MotionCore", "MotionClient", "MotionSystem",
                "TestSupport", "HubTestKit", "motiond",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "MotionMetricsTests",
            dependencies: [
                "MotionMetrics", "MotionHub", "MotionWire", "MotionCore", "MotionClient", "TestSupport", "motiond",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(name: "MotionConfigurationTests", dependencies: ["MotionConfiguration", "MotionCore", "MotionWire", "MotionDevices", "TestSupport", "motiond"]),
        .testTarget(
            name: "MotionDaemonTests",
            dependencies: [
                "MotionDaemon", "MotionHub", "MotionSocketServer", "MotionConfiguration", "MotionWire", "MotionCore", "MotionFusion",
                "MotionDevices", "MotionClient", "MotionSystem", "TestSupport", "HubTestKit", "motiond",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "MotionFusionTests", dependencies: ["MotionFusion", "MotionCore", "TestSupport"], resources: [.copy("Fixtures")]),
        .target(
            name: "TestSupport",
            dependencies: [
                "CUMockdev", "MotionClient", "MotionWire",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/TestSupport", resources: [.copy("Fixtures")]),
        // The hub test kit: a whole hub on NIO's testing loop, scripted devices, recording clients; the
        // hub's rules are tested through it in milliseconds, with no socket, process or sleep.
        .target(
            name: "HubTestKit",
            dependencies: [
                "MotionHub", "MotionWire", "MotionCore", "MotionDevices",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HubTestKit"),
        .testTarget(
            name: "MotionDevicesTests",
            dependencies: ["MotionDevices", "MotionCore", "MotionFusion", "MotionSystem", "TestSupport", "CLibIIO"]),

        .executableTarget(
            name: "MotionDevicesBenchmarks",
            dependencies: [
                "MotionDevices", "MotionCore",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/MotionDevicesBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "MotionFusionBenchmarks",
            dependencies: [
                "MotionFusion", "MotionCore",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/MotionFusionBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        .executableTarget(
            name: "MotionWireBenchmarks",
            dependencies: [
                "MotionWire", "MotionCore",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/MotionWireBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]),
        // motiond under load, as a child process on a fake IMU: see Benchmarks/DaemonLoad.
        .executableTarget(
            name: "daemon-load",
            dependencies: [
                "TestSupport", "MotionClient", "MotionWire", "MotionSystem", "MotionCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/DaemonLoad"),
    ],
    swiftLanguageModes: [.v6]
)

import Foundation
import Testing

@testable import StpdDaemon

/// The transport's limits (docs/protocol.md, "Limits"): each a key with a default and a documented range,
/// set by flag, environment or config file like every setting.
@Suite struct LimitSettingsTests {
    private let environment = ["XDG_CONFIG_HOME": "/nonexistent"]

    @Test func defaults() throws {
        let c = try DaemonConfiguration.resolve(flags: [:], environment: environment)
        #expect(c.maxInFlight == 64)
        #expect(c.maxBatchRequests == 1000)
        #expect(c.maxConnections == 4096)
        #expect(c.maxConnectionsPerUID == 1024)
        #expect(c.connectionIdleTimeout == .seconds(600))
        #expect(c.frameTimeout == .seconds(10))
    }

    @Test func eachIsSet() throws {
        let c = try DaemonConfiguration.resolve(
            flags: [
                "STPD_MAX_IN_FLIGHT": "8", "STPD_MAX_BATCH": "50", "STPD_MAX_CONNECTIONS": "100",
                "STPD_MAX_CONNECTIONS_PER_UID": "10", "STPD_FRAME_TIMEOUT": "3",
            ],
            environment: environment.merging(["STPD_CONNECTION_IDLE_TIMEOUT": "0"]) { $1 })
        #expect(c.maxInFlight == 8)
        #expect(c.maxBatchRequests == 50)
        #expect(c.maxConnections == 100)
        #expect(c.maxConnectionsPerUID == 10)
        #expect(c.connectionIdleTimeout == nil, "0 never closes idle connections")
        #expect(c.frameTimeout == .seconds(3))
    }

    static let limits = [
        "STPD_MAX_IN_FLIGHT", "STPD_MAX_BATCH", "STPD_MAX_CONNECTIONS", "STPD_MAX_CONNECTIONS_PER_UID",
        "STPD_CONNECTION_IDLE_TIMEOUT", "STPD_FRAME_TIMEOUT",
    ]

    /// Each range's ends are accepted and one past them refused, naming the key.
    @Test(arguments: limits)
    func rangesAreEnforced(key: String) throws {
        let range = try #require(ConfigurationKeys.named(key)?.range, "\(key) is declared with a range")
        for value in [range.lowerBound, range.upperBound] {
            _ = try DaemonConfiguration.resolve(flags: [key: "\(value)"], environment: environment)
        }
        for value in ["\(range.lowerBound - 1)", "\(range.upperBound + 1)", "many", "9223372036854775807"] {
            let error = #expect(throws: ConfigurationError.self) {
                try DaemonConfiguration.resolve(flags: [key: value], environment: environment)
            }
            #expect(error?.description.contains(key) == true)
        }
    }

    /// Every limit is a flag too.
    @Test(arguments: limits)
    func isAFlag(key: String) throws {
        let flag = try #require(ConfigurationKeys.named(key)?.flag)
        let flags = try ConfigurationKeys.parseArguments([flag, "7"], extraFlags: [])
        #expect(flags[key] == "7")
    }
}

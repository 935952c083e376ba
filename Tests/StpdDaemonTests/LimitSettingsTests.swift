import Foundation
import Testing

@testable import StpdDaemon

/// The transport's limits (README, "Limits"): each a key with a default and a documented range,
/// set by flag, environment or config file like every setting.
@Suite struct LimitSettingsTests {
    private let environment = ["XDG_CONFIG_HOME": "/nonexistent"]

    @Test func defaults() throws {
        let c = try DaemonConfiguration.resolve(flags: [:], environment: environment)
        #expect(c.maxInFlight == 64)
        #expect(c.maxBatchRequests == 1000)
        #expect(c.maxConnections == 4096)
        #expect(c.maxConnectionsPerUID == 2048)
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
        #expect(c.description.contains("STPD_MAX_CONNECTIONS_PER_UID=10"))
    }

    /// Each range's ends are accepted and one past them refused, naming the key.
    @Test(arguments: DaemonConfiguration.limitRanges.sorted { $0.key < $1.key })
    func rangesAreEnforced(key: String, range: ClosedRange<Int>) throws {
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

    /// Every limit has a row in `keys` (so `stpd --help` and the README list it).
    @Test func everyLimitIsListed() {
        let listed = Set(DaemonConfiguration.keys.map(\.key))
        for key in DaemonConfiguration.limitRanges.keys { #expect(listed.contains(key), "\(key)") }
    }
}

import Foundation
import Testing

@testable import StpdDaemon

/// Configuration refuses what it does not understand: unknown keys are reported with the nearest
/// known one (an error under --strict-config), numbers outside their documented range are refused,
/// and messages name the setting and the value, never an NSError domain.
@Suite final class ConfigurationStrictnessTests {
    let directory: URL
    var home: [String: String] { ["XDG_CONFIG_HOME": directory.path] }

    init() throws {
        directory = try TrustedFiles.directory("stpd-strict")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func configFile(_ text: String) throws -> String {
        let path = directory.appendingPathComponent("stpd.conf").path
        try TrustedFiles.write(text, to: path)
        return path
    }

    func failure(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as ConfigurationError {
            return error.description
        } catch {
            return "not a ConfigurationError: \(error)"
        }
    }

    // MARK: Unknown keys

    @Test func anUnknownEnvironmentKeyIsNamedWithTheNearestKnownOne() throws {
        let c = try DaemonConfiguration.resolve(
            flags: [:], environment: home.merging(["STPD_MAX_FRAM_BYTES": "5"]) { a, _ in a })
        #expect(
            c.warnings == ["unknown key STPD_MAX_FRAM_BYTES in the environment: did you mean STPD_MAX_FRAME_BYTES?"])
        #expect(c.maxFrameBytes == 1 << 20)
    }

    @Test func unknownConfigFileKeysAreNamedWithTheirLine() throws {
        let file = try configFile(
            """
            # lower case, no prefix, and nothing like a setting
            stpd_max_frame_bytes=2048
            max_frame_bytes=2048
            STPD_BANANA=1
            STPD_CONFIG=/elsewhere
            STPD_LOG_LEVEL=debug
            """)
        let c = try DaemonConfiguration.resolve(flags: [:], environment: [:], configFile: file)
        #expect(
            c.warnings == [
                "\(file):2: unknown key stpd_max_frame_bytes: keys are upper case: did you mean STPD_MAX_FRAME_BYTES?",
                "\(file):3: unknown key max_frame_bytes: did you mean STPD_MAX_FRAME_BYTES?",
                "\(file):4: unknown key STPD_BANANA: no setting has a name like it (stpd --help lists them)",
                "\(file):5: STPD_CONFIG has no effect in a config file",
            ])
        #expect(c.maxFrameBytes == 1 << 20)
        #expect(c.logLevel == .debug)
    }

    @Test func knownNamesOfTheEnvironmentAreNotReported() throws {
        let env = home.merging([
            "STPD_AUTHORIZATION": "Bearer stpctl's", "STPD_CONFIG": "/dev/null", "STPD_STRIPE_KEY": "",
            "PATH": "/usr/bin", "STPD_LOG_LEVEL": "info",
        ]) { a, _ in a }
        #expect(try DaemonConfiguration.resolve(flags: [:], environment: env).warnings.isEmpty)
    }

    @Test(arguments: [
        (["STPD_STRICT_CONFIG": "1"], [String: String]()), ([:], ["STPD_STRICT_CONFIG": "1"]),
    ])
    func strictConfigTurnsUnknownKeysIntoAnError(flags: [String: String], env: [String: String]) throws {
        let environment = env.merging(home.merging(["STPD_MAX_FRAM_BYTES": "5"]) { a, _ in a }) { a, _ in a }
        let message = failure { _ = try DaemonConfiguration.resolve(flags: flags, environment: environment) }
        #expect(message?.contains("STPD_MAX_FRAM_BYTES in the environment: did you mean STPD_MAX_FRAME_BYTES?") == true)
        #expect(message?.contains("--strict-config") == true)
    }

    @Test func strictConfigInTheFileCoversTheFile() throws {
        let file = try configFile("STPD_STRICT_CONFIG=1\nstpd_log_level=debug\n")
        #expect(failure { _ = try DaemonConfiguration.resolve(flags: [:], environment: [:], configFile: file) } != nil)
    }

    // MARK: Ranges

    @Test func everyNumericSettingHasADocumentedRange() {
        for setting in ConfigurationKeys.all where ["N", "SECONDS"].contains(setting.valueName) {
            let range = setting.range
            #expect(range != nil, "\(setting.key) has no range")
            if let range {
                #expect(setting.accepts.contains("\(range.lowerBound) to \(range.upperBound)"), "\(setting.key)")
            }
        }
    }

    /// Each bound is accepted and a step beyond it refused, with the key, the value and where it came from.
    @Test func valuesOutsideTheRangeAreRefused() throws {
        let numeric = ConfigurationKeys.all.filter { $0.range != nil }
        #expect(numeric.count >= 9)
        // A setting whose bound depends on another is tried with that one at its own bound.
        let companions = ["STPD_RESERVED_CONNECTIONS": ["STPD_MAX_CONNECTIONS": "65536"]]
        for setting in numeric {
            let range = try #require(setting.range)
            for good in [range.lowerBound, range.upperBound] {
                let flags = [setting.key: "\(good)"].merging(companions[setting.key] ?? [:]) { a, _ in a }
                #expect(throws: Never.self, "\(setting.key)=\(good)") {
                    try DaemonConfiguration.resolve(flags: flags, environment: home)
                }
            }
            for bad in ["\(range.lowerBound - 1)", "\(range.upperBound + 1)", "9223372036854775807", "-5", "1e3", ""] {
                let message = failure {
                    _ = try DaemonConfiguration.resolve(flags: [setting.key: bad], environment: home)
                }
                #expect(
                    message?.hasPrefix("\(setting.key)=\(bad) (from \(setting.flag!)) is not valid") == true,
                    "\(message ?? "accepted") for \(bad)")
            }
        }
    }

    /// Issue 32: `--reserved-connections 3000` was silently cut to half of the 4096 connections.
    @Test func reservedConnectionsOverHalfTheConnectionsAreRefusedByName() throws {
        let flags = try ConfigurationKeys.parseArguments(["--reserved-connections", "3000"])
        #expect(
            failure { _ = try DaemonConfiguration.resolve(flags: flags, environment: home) }
                == "STPD_RESERVED_CONNECTIONS=3000 (from --reserved-connections) is not valid: expected 0 to 2048 connections: at most half of STPD_MAX_CONNECTIONS=4096"
        )
        let fits = ["STPD_RESERVED_CONNECTIONS": "3000", "STPD_MAX_CONNECTIONS": "6000"]
        #expect(try DaemonConfiguration.resolve(flags: fits, environment: home).reservedConnections == 3000)
        // The default is fitted, not refused: 64 reserved of 100 connections serves 50.
        let small = try DaemonConfiguration.resolve(flags: ["STPD_MAX_CONNECTIONS": "100"], environment: home)
        #expect(small.reservedConnections == 64)
    }

    @Test func aNegativeFlagValueIsARangeErrorNotAMissingValue() throws {
        let flags = try ConfigurationKeys.parseArguments(["--max-frame-bytes", "-5", "--event-max-count=7"])
        #expect(flags == ["STPD_MAX_FRAME_BYTES": "-5", "STPD_EVENT_MAX_COUNT": "7"])
        let message = failure { _ = try DaemonConfiguration.resolve(flags: flags, environment: home) }
        #expect(
            message
                == "STPD_MAX_FRAME_BYTES=-5 (from --max-frame-bytes) is not valid: expected a whole number of bytes from 1024 to 67108864"
        )
    }

    @Test func theCommandLineIsParsedFromTheDeclarations() throws {
        #expect(
            try ConfigurationKeys.parseArguments(["--debug-methods", "--strict-config"])
                == ["STPD_DEBUG_METHODS": "1", "STPD_STRICT_CONFIG": "1"])
        #expect(
            failure { _ = try ConfigurationKeys.parseArguments(["--max-fram-bytes", "5"]) }
                == "unknown option --max-fram-bytes: did you mean --max-frame-bytes?")
        #expect(
            failure { _ = try ConfigurationKeys.parseArguments(["--socket"]) }
                == "--socket needs a value: --socket PATH")
        #expect(
            failure { _ = try ConfigurationKeys.parseArguments(["--debug-methods=yes"]) }
                == "--debug-methods takes no value")
        #expect(failure { _ = try ConfigurationKeys.parseArguments(["serve"]) } == "unexpected argument 'serve'")
        // The key has no flag: a command line is visible to every local user.
        #expect(
            failure { _ = try ConfigurationKeys.parseArguments(["--stripe-key", "sk_test_x"]) }?.hasPrefix(
                "unknown option --stripe-key") == true)
    }

    @Test(arguments: ["yes", "true", "on", "no", "off", "2", ""])
    func debugMethodsTakesExactlyOneOrZero(value: String) {
        #expect(
            failure {
                _ = try DaemonConfiguration.resolve(
                    flags: [:], environment: home.merging(["STPD_DEBUG_METHODS": value]) { a, _ in a })
            }?
            .hasPrefix("STPD_DEBUG_METHODS=\(value) (from the environment) is not valid: expected 1 or 0") == true)
    }

    @Test func debugMethodsOneAndZero() throws {
        #expect(try DaemonConfiguration.resolve(flags: ["STPD_DEBUG_METHODS": "1"], environment: home).debugMethods)
        let file = try configFile("STPD_DEBUG_METHODS=0\n")
        #expect(try !DaemonConfiguration.resolve(flags: [:], environment: [:], configFile: file).debugMethods)
    }

    // MARK: Messages

    @Test func aDirectoryWhereAFileBelongsIsNamedSo() throws {
        let dir = directory.appendingPathComponent("adir").path
        try TrustedFiles.make(directoryAt: dir)
        let config = failure { _ = try DaemonConfiguration.resolve(flags: [:], environment: [:], configFile: dir) }
        #expect(config == "cannot read config file \(dir): it is a directory")
        let key = failure {
            _ = try DaemonConfiguration.resolve(flags: ["STPD_STRIPE_KEY_FILE": dir], environment: home)
        }
        #expect(key == "Stripe key from key file \(dir): cannot read it: it is a directory")
        for message in [config, key] { #expect(message?.contains("Domain") == false) }
    }

    @Test func aBadValueInTheFileNamesItsLine() throws {
        let file = try configFile("\nSTPD_EVENT_MAX_COUNT=0\n")
        #expect(
            failure { _ = try DaemonConfiguration.resolve(flags: [:], environment: [:], configFile: file) }
                == "STPD_EVENT_MAX_COUNT=0 (from \(file):2) is not valid: expected a whole number of events from 1 to 10000000"
        )
    }

    // MARK: The declarations

    @Test func keysAndFlagsAreUniqueAndWellFormed() {
        let keys = ConfigurationKeys.all.map(\.key)
        let flags = ConfigurationKeys.all.compactMap(\.flag)
        #expect(Set(keys).count == keys.count)
        #expect(Set(flags).count == flags.count)
        #expect(keys.allSatisfy { $0.hasPrefix("STPD_") && $0 == $0.uppercased() })
        #expect(flags.allSatisfy { $0.hasPrefix("--") && $0 == $0.lowercased() })
    }

    @Test func theLoggedConfigurationListsEverySetting() {
        let logged = DaemonConfiguration(stateDirectory: "/s").description
        for key in ConfigurationKeys.all.map(\.key) { #expect(logged.contains("\(key)="), "\(key)") }
    }

    /// docs/configuration.md's table is `ConfigurationKeys.markdownTable` (`make settings-table` writes it).
    @Test func theDocumentedTableIsCurrent() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/configuration.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        let begin = try #require(text.range(of: "<!-- settings:begin -->\n"))
        let end = try #require(text.range(of: "\n<!-- settings:end -->"))
        #expect(
            String(text[begin.upperBound..<end.lowerBound]) == ConfigurationKeys.markdownTable,
            "docs/configuration.md's settings table is stale: run make settings-table")
    }

    // MARK: Server-key sessions

    @Test func serverKeyAccessIsRootAndTheDaemonsOwnUidUnlessListed() throws {
        let none = ServerKeyAccess()
        #expect(none.allows(uid: 0, customer: "cus_a", daemonUID: 500))
        #expect(none.allows(uid: 500, customer: "cus_a", daemonUID: 500))
        #expect(!none.allows(uid: 1001, customer: "cus_a", daemonUID: 500))
        let listed = ServerKeyAccess(uids: [1001], customers: ["cus_kiosk"])
        #expect(listed.allows(uid: 1001, customer: "cus_a", daemonUID: 500))
        #expect(listed.allows(uid: 1002, customer: "cus_kiosk", daemonUID: 500))
        #expect(!listed.allows(uid: 1002, customer: "cus_a", daemonUID: 500))

        let c = try DaemonConfiguration.resolve(
            flags: ["STPD_SERVER_KEY_UIDS": "1001, root", "STPD_SERVER_KEY_CUSTOMERS": "cus_kiosk"], environment: home)
        #expect(c.serverKeyAccess == ServerKeyAccess(uids: [1001, 0], customers: ["cus_kiosk"]))
        #expect(
            failure {
                _ = try DaemonConfiguration.resolve(
                    flags: ["STPD_SERVER_KEY_UIDS": "no-such-user-x"], environment: home)
            }?
            .hasPrefix("STPD_SERVER_KEY_UIDS=no-such-user-x") == true)
        #expect(
            failure {
                _ = try DaemonConfiguration.resolve(flags: ["STPD_SERVER_KEY_CUSTOMERS": "acct_1"], environment: home)
            } != nil)
    }
}

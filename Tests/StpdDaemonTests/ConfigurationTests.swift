import Foundation
import Testing

@testable import StpdDaemon

/// Settings resolve flag > environment > config file > default, under one set of keys.
@Suite final class ConfigurationTests {
    let directory: URL

    init() throws {
        directory = try TrustedFiles.directory("stpd-config")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func configFile(_ text: String) throws -> String {
        let path = directory.appendingPathComponent("stpd.conf").path
        try TrustedFiles.write(text, to: path)
        return path
    }

    @Test func defaultsApplyWhenNothingIsSet() throws {
        let c = try DaemonConfiguration.resolve(
            flags: [:], environment: ["HOME": "/home/u", "XDG_CONFIG_HOME": directory.path])
        #expect(c.socketMode == 0o600)
        #expect(c.maxFrameBytes == 1 << 20)
        #expect(c.idleTimeout == .seconds(30))
        #expect(c.listenFDName == "stpd")
        #expect(c.debugMethods == false)
        #expect(c.eventRetention.maxCount == 100_000)
    }

    @Test func flagBeatsEnvironmentBeatsFile() throws {
        let file = try configFile(
            """
            # comment
            STPD_MAX_FRAME_BYTES=1111
            STPD_LOG_LEVEL="debug"
            STPD_IDLE_TIMEOUT = 7
            """)
        let env = ["STPD_MAX_FRAME_BYTES": "2222", "STPD_LOG_LEVEL": "error", "STPD_CONFIG": file]
        let c = try DaemonConfiguration.resolve(flags: ["STPD_MAX_FRAME_BYTES": "3333"], environment: env)
        #expect(c.maxFrameBytes == 3333)
        #expect(c.logLevel == .error)
        #expect(c.idleTimeout == .seconds(7))
    }

    @Test func explicitConfigFileWinsOverEnvironmentVariableNamingOne() throws {
        let file = try configFile("STPD_SOCKET_MODE=0660\n")
        let c = try DaemonConfiguration.resolve(
            flags: [:], environment: ["STPD_CONFIG": "/nonexistent"], configFile: file)
        #expect(c.socketMode == 0o660)
    }

    @Test func stateDirectoryFollowsSystemdThenXDG() throws {
        let systemd = try DaemonConfiguration.resolve(
            flags: [:], environment: ["STATE_DIRECTORY": "/var/lib/stpd:/other", "XDG_CONFIG_HOME": directory.path])
        #expect(systemd.stateDirectory == "/var/lib/stpd")
        let xdg = try DaemonConfiguration.resolve(
            flags: [:], environment: ["XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": directory.path])
        #expect(xdg.stateDirectory == "/s/stpd")
        #expect(xdg.databasePath == "/s/stpd/stpd.sqlite")
    }

    @Test func idleTimeoutZeroDisablesIdleExit() throws {
        let c = try DaemonConfiguration.resolve(
            flags: ["STPD_IDLE_TIMEOUT": "0"], environment: ["XDG_CONFIG_HOME": directory.path])
        #expect(c.idleTimeout == nil)
    }

    @Test(arguments: [
        ("STPD_SOCKET_MODE", "999"), ("STPD_SOCKET_MODE", "rw"), ("STPD_LOG_LEVEL", "loud"),
        ("STPD_MAX_FRAME_BYTES", "0"), ("STPD_MAX_FRAME_BYTES", "-5"), ("STPD_IDLE_TIMEOUT", "-1"),
        ("STPD_DEBUG_METHODS", "maybe"),
    ])
    func invalidValuesAreRefusedNamingTheKey(key: String, value: String) throws {
        let error = #expect(throws: ConfigurationError.self) {
            try DaemonConfiguration.resolve(flags: [key: value], environment: ["XDG_CONFIG_HOME": directory.path])
        }
        #expect(error?.description.contains(key) == true)
    }

    @Test func malformedConfigLineNamesFileAndLine() throws {
        let file = try configFile("STPD_LOG_LEVEL=info\nthis is not a setting\n")
        let error = #expect(throws: ConfigurationError.self) {
            try DaemonConfiguration.resolve(flags: [:], environment: [:], configFile: file)
        }
        #expect(error?.description == "\(file):2: expected KEY=VALUE")
    }

    @Test func bindPathUsesRuntimeDirectoryOrAsksForOne() throws {
        var c = DaemonConfiguration(stateDirectory: "/s")
        if getuid() != 0 {
            #expect(try c.bindPath(environment: ["XDG_RUNTIME_DIR": "/run/user/1000"]) == "/run/user/1000/stpd.sock")
            #expect(throws: ConfigurationError.self) { try c.bindPath(environment: [:]) }
        } else {
            #expect(try c.bindPath(environment: ["XDG_RUNTIME_DIR": "/run/user/0"]) == "/run/stpd/stpd.sock")
        }
        c.socketPath = "/tmp/x.sock"
        #expect(try c.bindPath(environment: [:]) == "/tmp/x.sock")
    }
}

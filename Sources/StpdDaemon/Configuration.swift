import Foundation
import Logging
import StpdCore

/// Everything the daemon can be told. Each setting has one key (`STPD_SOCKET`, ...), set by a
/// command-line flag (`--socket`), the environment, or the config file, in that order of
/// precedence, then the built-in default.
public struct DaemonConfiguration: Sendable {
    /// Where to bind when systemd passes no socket. Nil: `$XDG_RUNTIME_DIR/stpd.sock`, or
    /// `/run/stpd/stpd.sock` as root.
    public var socketPath: String?
    public var socketMode: mode_t = 0o600
    public var stateDirectory: String
    public var logLevel: Logger.Level = .info
    public var maxFrameBytes = 1 << 20
    public var maxOutboundBytes = 4 << 20
    /// The `FileDescriptorName=` of the socket to take from systemd.
    public var listenFDName = "stpd"
    /// How long in-flight requests may run after SIGTERM before they are cancelled.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// Idle time after which a socket-activated daemon exits; nil never exits.
    public var idleTimeout: Duration? = .seconds(30)
    public var eventRetention = EventRetention()
    /// Enables `debug.emit`.
    public var debugMethods = false

    /// The SQLite database in the state directory.
    public var databasePath: String { "\(stateDirectory)/stpd.sqlite" }

    /// Keys and what they mean; the README's table and `stpd --help` follow this list.
    public static let keys: [(key: String, flag: String, meaning: String)] = [
        ("STPD_SOCKET", "--socket", "socket path to bind when not socket-activated"),
        ("STPD_SOCKET_MODE", "--socket-mode", "octal file mode of a socket stpd binds itself (default 0600)"),
        ("STPD_STATE_DIR", "--state-dir", "directory for durable state"),
        ("STPD_LOG_LEVEL", "--log-level", "trace, debug, info, notice, warning, error or critical"),
        ("STPD_MAX_FRAME_BYTES", "--max-frame-bytes", "largest request line accepted (default 1048576)"),
        ("STPD_MAX_OUTBOUND_BYTES", "--max-outbound-bytes", "bytes queued per connection before notifications are refused (default 4194304)"),
        ("STPD_LISTEN_FD_NAME", "--listen-fd-name", "FileDescriptorName= of the systemd socket to use (default stpd)"),
        ("STPD_SHUTDOWN_GRACE", "--shutdown-grace", "seconds in-flight requests may finish after SIGTERM (default 10)"),
        ("STPD_IDLE_TIMEOUT", "--idle-timeout", "seconds idle before a socket-activated stpd exits; 0 never (default 30)"),
        ("STPD_EVENT_MAX_AGE", "--event-max-age", "seconds events are kept in the log (default 604800, 7 days)"),
        ("STPD_EVENT_MAX_COUNT", "--event-max-count", "most events kept in the log (default 100000)"),
        ("STPD_DEBUG_METHODS", "--debug-methods", "1 enables debug.emit, a test event source for client authors"),
    ]

    public init(stateDirectory: String) {
        self.stateDirectory = stateDirectory
    }

    /// Resolves the settings from their sources. `flags` uses the same keys as the environment.
    public static func resolve(
        flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
        configFile explicitConfigFile: String? = nil
    ) throws -> DaemonConfiguration {
        let configPath = explicitConfigFile ?? environment["STPD_CONFIG"]
        let file = try configPath.map { try ConfigFile.read(path: $0) }
            ?? ConfigFile.readIfPresent(path: defaultConfigPath(environment)) ?? [:]
        func value(_ key: String) -> String? { flags[key] ?? environment[key] ?? file[key] }

        var c = DaemonConfiguration(stateDirectory: value("STPD_STATE_DIR") ?? defaultStateDirectory(environment))
        c.socketPath = value("STPD_SOCKET")
        if let raw = value("STPD_SOCKET_MODE") {
            guard let mode = mode_t(raw, radix: 8), mode <= 0o777 else { throw ConfigurationError.invalid("STPD_SOCKET_MODE", raw, "an octal mode such as 0660") }
            c.socketMode = mode
        }
        if let raw = value("STPD_LOG_LEVEL") {
            guard let level = Logger.Level(rawValue: raw.lowercased()) else {
                throw ConfigurationError.invalid("STPD_LOG_LEVEL", raw, "trace, debug, info, notice, warning, error or critical")
            }
            c.logLevel = level
        }
        c.maxFrameBytes = try positive("STPD_MAX_FRAME_BYTES", value("STPD_MAX_FRAME_BYTES")) ?? c.maxFrameBytes
        c.maxOutboundBytes = try positive("STPD_MAX_OUTBOUND_BYTES", value("STPD_MAX_OUTBOUND_BYTES")) ?? c.maxOutboundBytes
        c.listenFDName = value("STPD_LISTEN_FD_NAME") ?? c.listenFDName
        if let grace = try positive("STPD_SHUTDOWN_GRACE", value("STPD_SHUTDOWN_GRACE")) { c.shutdownGracePeriod = .seconds(grace) }
        if let idle = try whole("STPD_IDLE_TIMEOUT", value("STPD_IDLE_TIMEOUT")) { c.idleTimeout = idle == 0 ? nil : .seconds(idle) }
        if let age = try positive("STPD_EVENT_MAX_AGE", value("STPD_EVENT_MAX_AGE")) { c.eventRetention.maxAge = .seconds(age) }
        c.eventRetention.maxCount = try positive("STPD_EVENT_MAX_COUNT", value("STPD_EVENT_MAX_COUNT")) ?? c.eventRetention.maxCount
        if let raw = value("STPD_DEBUG_METHODS") {
            switch raw.lowercased() {
            case "1", "true", "yes", "on": c.debugMethods = true
            case "0", "false", "no", "off", "": c.debugMethods = false
            default: throw ConfigurationError.invalid("STPD_DEBUG_METHODS", raw, "1 or 0")
            }
        }
        return c
    }

    static func positive(_ key: String, _ raw: String?) throws -> Int? {
        guard let raw else { return nil }
        guard let n = Int(raw), n > 0 else { throw ConfigurationError.invalid(key, raw, "a positive whole number") }
        return n
    }

    static func whole(_ key: String, _ raw: String?) throws -> Int? {
        guard let raw else { return nil }
        guard let n = Int(raw), n >= 0 else { throw ConfigurationError.invalid(key, raw, "a whole number of seconds (0 disables)") }
        return n
    }

    static func defaultConfigPath(_ env: [String: String]) -> String {
        if getuid() == 0 { return "/etc/stpd/stpd.conf" }
        let base = env["XDG_CONFIG_HOME"] ?? (env["HOME"].map { "\($0)/.config" } ?? "/nonexistent")
        return "\(base)/stpd/stpd.conf"
    }

    /// `$STATE_DIRECTORY` under systemd (its first entry), else the XDG state folder.
    static func defaultStateDirectory(_ env: [String: String]) -> String {
        if let systemd = env["STATE_DIRECTORY"]?.split(separator: ":").first { return String(systemd) }
        if getuid() == 0, env["XDG_STATE_HOME"] == nil { return "/var/lib/stpd" }
        let base = env["XDG_STATE_HOME"] ?? (env["HOME"].map { "\($0)/.local/state" } ?? "/tmp")
        return "\(base)/stpd"
    }

    /// The path to bind when systemd passes no socket.
    public func bindPath(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        if let socketPath { return socketPath }
        if getuid() == 0 { return "/run/stpd/stpd.sock" }
        guard let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else {
            throw ConfigurationError.noSocketPath
        }
        return "\(runtime)/stpd.sock"
    }
}

public enum ConfigurationError: Error, CustomStringConvertible {
    case invalid(String, String, String)
    case unreadable(String, String)
    case malformedLine(String, Int)
    case noSocketPath

    public var description: String {
        switch self {
        case .invalid(let key, let raw, let expected): return "\(key)=\(raw) is not valid: expected \(expected)"
        case .unreadable(let path, let reason): return "cannot read config file \(path): \(reason)"
        case .malformedLine(let path, let line): return "\(path):\(line): expected KEY=VALUE"
        case .noSocketPath: return "XDG_RUNTIME_DIR is not set; pass --socket PATH (or STPD_SOCKET)"
        }
    }
}

/// The config file: `KEY=VALUE` lines with the same keys as the environment, `#` comments,
/// optional double quotes (the shape of a systemd EnvironmentFile, so one file serves both).
enum ConfigFile {
    static func read(path: String) throws -> [String: String] {
        // FileHandle reads character devices and pipes too (`--config /dev/null`, `<(...)`).
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError.unreadable(path, String(cString: strerror(errno)))
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.readToEnd() ?? Data() } catch {
            throw ConfigurationError.unreadable(path, error.localizedDescription)
        }
        guard let text = String(data: data, encoding: .utf8) else { throw ConfigurationError.unreadable(path, "not UTF-8 text") }
        var values: [String: String] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "="), eq != line.startIndex else {
                throw ConfigurationError.malformedLine(path, index + 1)
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            values[key] = value
        }
        return values
    }

    static func readIfPresent(path: String) throws -> [String: String]? {
        FileManager.default.fileExists(atPath: path) ? try read(path: path) : nil
    }
}

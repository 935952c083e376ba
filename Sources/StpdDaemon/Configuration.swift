import Foundation
import Logging
import StpdCore
import StripeAPI

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
    /// `events.wait` calls that may wait at once, per connection and per uid.
    public var waitLimits = WaitLimits()
    /// Enables `debug.emit`.
    public var debugMethods = false
    /// The Stripe API's origin, validated by `validateStripeAPIBase` (no path, http only on loopback).
    public var stripeAPIBase = DaemonConfiguration.defaultStripeAPIBase
    /// `STPD_STRIPE_KEY_FILE`, when set (the key may still come from the systemd credential first).
    public var stripeKeyFile: String?
    /// The daemon's own key: publishable (the SDK's client model, with ephemeral keys per customer)
    /// or secret/restricted (beside a server). Nil: stpd serves, and Stripe methods answer
    /// StripeNotConfigured. Prints redacted (`StripeKey` never shows its secret).
    public var stripeKey: StripeKey?
    /// Where `stripeKey` came from, for the log.
    public var stripeKeySource: StripeKeySource?
    /// The connected account sent as `Stripe-Account` (Connect), if any.
    public var stripeAccount: String?
    /// Per attempt of a Stripe call; each retry gets a fresh one.
    public var stripeTimeout: Duration = .seconds(30)
    /// Sent as `redirect_merchant_name` on Sources' return URLs unless a call names one (the SDK's companyName).
    public var merchantName: String?
    /// The command (and its arguments) stpd runs with a URL appended for `opener: daemon`; nil: off.
    public var urlOpener: [String]?
    /// Seconds a Source is polled after its redirect completes (the seeds suggest a short 10 s).
    public var redirectPollTimeout: Double = 10
    /// Seconds a payment context's pending action waits for the app's answer.
    public var pendingActionTimeout: Double = 600
    /// Things worth a warning in the log (a key file others can read, ignored key sources). Resolution
    /// runs before logging is set up, so whoever starts the daemon logs these (`StripeSetup` does).
    public var warnings: [String] = []

    public static let defaultStripeAPIBase = "https://api.stripe.com"

    /// The SQLite database in the state directory.
    public var databasePath: String { "\(stateDirectory)/stpd.sqlite" }

    /// Keys and what they mean; the README's table and `stpd --help` follow this list.
    public static let keys: [(key: String, flag: String, meaning: String)] = [
        ("STPD_SOCKET", "--socket", "socket path to bind when not socket-activated"),
        ("STPD_SOCKET_MODE", "--socket-mode", "octal file mode of a socket stpd binds itself (default 0600)"),
        ("STPD_STATE_DIR", "--state-dir", "directory for durable state"),
        ("STPD_LOG_LEVEL", "--log-level", "trace, debug, info, notice, warning, error or critical"),
        ("STPD_MAX_FRAME_BYTES", "--max-frame-bytes", "largest request line accepted (default 1048576)"),
        (
            "STPD_MAX_OUTBOUND_BYTES", "--max-outbound-bytes",
            "bytes queued per connection before notifications are refused (default 4194304)"
        ),
        ("STPD_LISTEN_FD_NAME", "--listen-fd-name", "FileDescriptorName= of the systemd socket to use (default stpd)"),
        ("STPD_SHUTDOWN_GRACE", "--shutdown-grace", "seconds in-flight requests may finish after SIGTERM (default 10)"),
        (
            "STPD_IDLE_TIMEOUT", "--idle-timeout",
            "seconds idle before a socket-activated stpd exits; 0 never (default 30)"
        ),
        ("STPD_EVENT_MAX_AGE", "--event-max-age", "seconds events are kept in the log (default 604800, 7 days)"),
        ("STPD_EVENT_MAX_COUNT", "--event-max-count", "most events kept in the log (default 100000)"),
        (
            "STPD_MAX_WAITS_PER_CONNECTION", "--max-waits-per-connection",
            "events.wait calls waiting at once on one connection, 1-1000 (default 16)"
        ),
        (
            "STPD_MAX_WAITS_PER_UID", "--max-waits-per-uid",
            "events.wait calls waiting at once for one uid, 1-100000 (default 256)"
        ),
        ("STPD_DEBUG_METHODS", "--debug-methods", "1 enables debug.emit, a test event source for client authors"),
        (
            "STPD_STRIPE_API_BASE", "--stripe-api-base",
            "Stripe API origin (default https://api.stripe.com; http only for loopback)"
        ),
        (
            "STPD_STRIPE_KEY_FILE", "--stripe-key-file",
            "file holding the Stripe key (after $CREDENTIALS_DIRECTORY/stripe-key)"
        ),
        ("STPD_STRIPE_KEY", "", "the Stripe key itself: environment or config file only, never a flag"),
        ("STPD_STRIPE_ACCOUNT", "--stripe-account", "connected account (acct_...) sent as Stripe-Account"),
        ("STPD_STRIPE_TIMEOUT", "--stripe-timeout", "seconds per attempt of a Stripe call (default 30)"),
        (
            "STPD_MERCHANT_NAME", "--merchant-name",
            "redirect_merchant_name added to Sources' return URLs (default none)"
        ),
        (
            "STPD_URL_OPENER", "--url-opener",
            "command run with a URL for redirect.start opener daemon, e.g. xdg-open (default off)"
        ),
        (
            "STPD_REDIRECT_POLL_TIMEOUT", "--redirect-poll-timeout",
            "seconds a Source is polled after its redirect completes (default 10)"
        ),
        (
            "STPD_PENDING_ACTION_TIMEOUT", "--pending-action-timeout",
            "seconds a payment context's pending action waits for its answer (default 600)"
        ),
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
        let defaultPath = defaultConfigPath(environment)
        let defaultFile = configPath == nil ? try ConfigFile.readIfPresent(path: defaultPath) : nil
        let file = try configPath.map { try ConfigFile.read(path: $0) } ?? defaultFile ?? [:]
        let loadedConfigPath = configPath ?? (defaultFile == nil ? nil : defaultPath)
        func value(_ key: String) -> String? { flags[key] ?? environment[key] ?? file[key] }

        var c = DaemonConfiguration(stateDirectory: value("STPD_STATE_DIR") ?? defaultStateDirectory(environment))
        c.socketPath = value("STPD_SOCKET")
        if let raw = value("STPD_SOCKET_MODE") {
            guard let mode = mode_t(raw, radix: 8), mode <= 0o777 else {
                throw ConfigurationError.invalid("STPD_SOCKET_MODE", raw, "an octal mode such as 0660")
            }
            c.socketMode = mode
        }
        if let raw = value("STPD_LOG_LEVEL") {
            guard let level = Logger.Level(rawValue: raw.lowercased()) else {
                throw ConfigurationError.invalid(
                    "STPD_LOG_LEVEL", raw, "trace, debug, info, notice, warning, error or critical")
            }
            c.logLevel = level
        }
        c.maxFrameBytes = try positive("STPD_MAX_FRAME_BYTES", value("STPD_MAX_FRAME_BYTES")) ?? c.maxFrameBytes
        c.maxOutboundBytes =
            try positive("STPD_MAX_OUTBOUND_BYTES", value("STPD_MAX_OUTBOUND_BYTES")) ?? c.maxOutboundBytes
        c.listenFDName = value("STPD_LISTEN_FD_NAME") ?? c.listenFDName
        if let grace = try positive("STPD_SHUTDOWN_GRACE", value("STPD_SHUTDOWN_GRACE")) {
            c.shutdownGracePeriod = .seconds(grace)
        }
        if let idle = try whole("STPD_IDLE_TIMEOUT", value("STPD_IDLE_TIMEOUT")) {
            c.idleTimeout = idle == 0 ? nil : .seconds(idle)
        }
        if let age = try positive("STPD_EVENT_MAX_AGE", value("STPD_EVENT_MAX_AGE")) {
            c.eventRetention.maxAge = .seconds(age)
        }
        c.eventRetention.maxCount =
            try positive("STPD_EVENT_MAX_COUNT", value("STPD_EVENT_MAX_COUNT")) ?? c.eventRetention.maxCount
        c.waitLimits.perConnection =
            try inRange(
                "STPD_MAX_WAITS_PER_CONNECTION", value("STPD_MAX_WAITS_PER_CONNECTION"), WaitLimits.perConnectionRange)
            ?? c.waitLimits.perConnection
        c.waitLimits.perUID =
            try inRange("STPD_MAX_WAITS_PER_UID", value("STPD_MAX_WAITS_PER_UID"), WaitLimits.perUIDRange)
            ?? c.waitLimits.perUID
        if let raw = value("STPD_DEBUG_METHODS") {
            switch raw.lowercased() {
            case "1", "true", "yes", "on": c.debugMethods = true
            case "0", "false", "no", "off", "": c.debugMethods = false
            default: throw ConfigurationError.invalid("STPD_DEBUG_METHODS", raw, "1 or 0")
            }
        }
        if let raw = value("STPD_STRIPE_API_BASE") { c.stripeAPIBase = try validateStripeAPIBase(raw) }
        if let raw = value("STPD_STRIPE_ACCOUNT"), !raw.isEmpty {
            guard raw.hasPrefix("acct_"), raw.count > 5,
                raw.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
            else {
                throw ConfigurationError.invalid(
                    "STPD_STRIPE_ACCOUNT", raw, "a connected account id such as acct_1032D82eZvKYlo2C")
            }
            c.stripeAccount = raw
        }
        if let seconds = try positive("STPD_STRIPE_TIMEOUT", value("STPD_STRIPE_TIMEOUT")) {
            c.stripeTimeout = .seconds(seconds)
        }
        c.merchantName = value("STPD_MERCHANT_NAME").flatMap { $0.isEmpty ? nil : $0 }
        c.urlOpener = value("STPD_URL_OPENER").map { $0.split(separator: " ").map(String.init) }.flatMap {
            $0.isEmpty ? nil : $0
        }
        if let seconds = try positive("STPD_REDIRECT_POLL_TIMEOUT", value("STPD_REDIRECT_POLL_TIMEOUT")) {
            c.redirectPollTimeout = Double(min(seconds, 300))
        }
        if let seconds = try positive("STPD_PENDING_ACTION_TIMEOUT", value("STPD_PENDING_ACTION_TIMEOUT")) {
            c.pendingActionTimeout = Double(seconds)
        }
        c.stripeKeyFile = value("STPD_STRIPE_KEY_FILE").flatMap { $0.isEmpty ? nil : $0 }
        // The key itself is never taken from `flags`: a command line is visible to every local user
        // (/proc/PID/cmdline, ps), while the environment and the config file are not.
        let setting: (text: String, source: StripeKeySource)? =
            if let text = environment["STPD_STRIPE_KEY"] {
                (text, .environment)
            } else if let text = file["STPD_STRIPE_KEY"] {
                (text, .configFile(path: loadedConfigPath ?? "config file"))
            } else { nil }
        try c.resolveStripeKey(credentialsDirectory: environment["CREDENTIALS_DIRECTORY"], setting: setting)
        return c
    }

    static func positive(_ key: String, _ raw: String?) throws -> Int? {
        guard let raw else { return nil }
        guard let n = Int(raw), n > 0 else { throw ConfigurationError.invalid(key, raw, "a positive whole number") }
        return n
    }

    static func inRange(_ key: String, _ raw: String?, _ range: ClosedRange<Int>) throws -> Int? {
        guard let raw else { return nil }
        guard let n = Int(raw), range.contains(n) else {
            throw ConfigurationError.invalid(key, raw, "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    static func whole(_ key: String, _ raw: String?) throws -> Int? {
        guard let raw else { return nil }
        guard let n = Int(raw), n >= 0 else {
            throw ConfigurationError.invalid(key, raw, "a whole number of seconds (0 disables)")
        }
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
    /// The Stripe key from `source` cannot be used; `reason` never quotes the key unredacted.
    case stripeKey(StripeKeySource, String)

    public var description: String {
        switch self {
        // Redacted in case a secret was put under the wrong key (STPD_STRIPE_ACCOUNT=sk_live_...).
        case .invalid(let key, let raw, let expected):
            return "\(key)=\(Redaction.redact(raw)) is not valid: expected \(expected)"
        case .stripeKey(let source, let reason): return "Stripe key from \(source): \(reason)"
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
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError.unreadable(path, "not UTF-8 text")
        }
        var values: [String: String] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "="), eq != line.startIndex else {
                throw ConfigurationError.malformedLine(path, index + 1)
            }
            let key = line[..<eq].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            values[key] = value
        }
        return values
    }

    static func readIfPresent(path: String) throws -> [String: String]? {
        FileManager.default.fileExists(atPath: path) ? try read(path: path) : nil
    }
}

/// Where the daemon's Stripe key came from; the first present in this order wins.
public enum StripeKeySource: Sendable, Hashable, CustomStringConvertible {
    /// `$CREDENTIALS_DIRECTORY/stripe-key`: systemd's `LoadCredential=stripe-key:...`.
    case credential(path: String)
    /// `STPD_STRIPE_KEY_FILE` / `--stripe-key-file`.
    case file(path: String)
    /// `STPD_STRIPE_KEY` in the environment.
    case environment
    /// `STPD_STRIPE_KEY` in the config file.
    case configFile(path: String)

    public var description: String {
        switch self {
        case .credential(let path): "systemd credential \(path)"
        case .file(let path): "key file \(path)"
        case .environment: "environment variable STPD_STRIPE_KEY"
        case .configFile(let path): "STPD_STRIPE_KEY in \(path)"
        }
    }
}

extension DaemonConfiguration {
    /// Picks the key: `$CREDENTIALS_DIRECTORY/stripe-key` (when that file exists), then the key
    /// file, then `STPD_STRIPE_KEY`. A source that is chosen but unusable is an error (stpd must not
    /// start on a different key than the operator meant); lower sources that are also set are only
    /// reported in `warnings`. Nothing set at all leaves `stripeKey` nil.
    mutating func resolveStripeKey(
        credentialsDirectory: String?, setting: (text: String, source: StripeKeySource)?
    ) throws {
        var candidates: [StripeKeySource] = []
        if let credentialsDirectory, !credentialsDirectory.isEmpty {
            let path = "\(credentialsDirectory)/stripe-key"
            if FileManager.default.fileExists(atPath: path) { candidates.append(.credential(path: path)) }
        }
        if let stripeKeyFile { candidates.append(.file(path: stripeKeyFile)) }
        // An empty STPD_STRIPE_KEY= (e.g. to blank one out of a shared EnvironmentFile) means unset.
        if let setting, !setting.text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            candidates.append(setting.source)
        }
        guard let chosen = candidates.first else { return }
        for ignored in candidates.dropFirst() {
            warnings.append("ignoring the Stripe key in \(ignored): the \(chosen) comes first")
        }
        let text: String
        switch chosen {
        case .credential(let path), .file(let path): text = try Self.readKeyFile(path, source: chosen)
        case .environment, .configFile: text = setting?.text ?? ""
        }
        stripeKey = try Self.parseStripeKey(text, source: chosen)
        stripeKeySource = chosen
        switch chosen {
        case .file(let path), .configFile(let path):
            if let warning = Self.exposureWarning(path: path) { warnings.append(warning) }
        case .credential, .environment: break  // systemd makes credentials 0400 for the service alone
        }
    }

    /// Trims surrounding whitespace (a trailing newline from `echo`), then accepts pk_, sk_ and rk_.
    static func parseStripeKey(_ text: String, source: StripeKeySource) throws -> StripeKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw ConfigurationError.stripeKey(source, "it is empty") }
        guard let key = StripeKey(trimmed) else {
            throw ConfigurationError.stripeKey(
                source,
                "\(StripeKey.redact(trimmed)) is not a Stripe key: expected one starting pk_, sk_ or rk_, on one line")
        }
        guard key.kind != .ephemeral else {
            throw ConfigurationError.stripeKey(
                source,
                """
                \(key) is an ephemeral key, which cannot be stpd's key: ephemeral keys are short-lived, \
                scoped to one customer, and fetched from the app's backend for each customer session. \
                Configure a publishable (pk_), secret (sk_) or restricted (rk_) key
                """)
        }
        return key
    }

    /// A key is a few hundred bytes at most; a bigger file is the wrong file.
    static let maxKeyFileBytes = 4096

    static func readKeyFile(_ path: String, source: StripeKeySource) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ConfigurationError.stripeKey(source, "cannot read it: \(String(cString: strerror(errno)))")
        }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: maxKeyFileBytes + 1) ?? Data() } catch {
            throw ConfigurationError.stripeKey(source, "cannot read it: \(error.localizedDescription)")
        }
        guard data.count <= maxKeyFileBytes else {
            throw ConfigurationError.stripeKey(
                source, "it is larger than \(maxKeyFileBytes) bytes, too large for a key")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError.stripeKey(source, "it is not UTF-8 text")
        }
        return text
    }

    /// Like ssh with a private key: a file holding the key that group or others may access gets a
    /// warning. It still loads (refusing would turn a sloppy mode into an outage).
    static func exposureWarning(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return nil }
        let mode = String(info.st_mode & 0o777, radix: 8)
        return
            "\(path) holds the Stripe key but its mode 0\(mode) lets group or others access it: chmod 600 it, or pass the key as a systemd credential"
    }

    /// Accepts `http(s)://host[:port]` with no path but `/`, no query, fragment or user info.
    /// Plain http is refused unless the host is loopback: every request carries the key in its
    /// Authorization header, which must not cross a network in the clear; loopback is for a local
    /// stand-in such as `stripe-test-server`. Returns the URL without a trailing `/`.
    public static func validateStripeAPIBase(_ raw: String) throws -> String {
        let key = "STPD_STRIPE_API_BASE"
        let expected = "an origin such as https://api.stripe.com (http(s)://host[:port], no path, query or user info)"
        // Only the characters an origin needs, so no parser can read a different host than this one.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:/[]")
        guard raw.allSatisfy(allowed.contains), let components = URLComponents(string: raw),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil, components.query == nil, components.fragment == nil,
            components.path.isEmpty || components.path == "/"
        else { throw ConfigurationError.invalid(key, raw, expected) }
        if let port = components.port, !(1...65535).contains(port) {
            throw ConfigurationError.invalid(key, raw, expected)
        }
        if scheme == "http", !isLoopback(host) {
            throw ConfigurationError.invalid(
                key, raw,
                "https: plain http is allowed only for a loopback host (127.0.0.0/8, ::1, localhost), since every request carries the API key"
            )
        }
        return raw.hasSuffix("/") ? String(raw.dropLast()) : raw
    }

    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes == Array(repeating: 0, count: 15) + [1] { return true }  // ::1
        // ::ffff:127.x.y.z, IPv4-mapped loopback.
        return bytes.prefix(12) == ArraySlice(Array(repeating: 0, count: 10) + [0xff, 0xff]) && bytes[12] == 127
    }
}

extension DaemonConfiguration: CustomStringConvertible {
    /// Every setting, the key redacted; safe to log.
    public var description: String {
        var lines: [(String, String)] = [
            ("STPD_SOCKET", socketPath ?? "(default)"),
            ("STPD_SOCKET_MODE", "0" + String(socketMode, radix: 8)),
            ("STPD_STATE_DIR", stateDirectory),
            ("STPD_LOG_LEVEL", logLevel.rawValue),
            ("STPD_MAX_FRAME_BYTES", "\(maxFrameBytes)"),
            ("STPD_MAX_OUTBOUND_BYTES", "\(maxOutboundBytes)"),
            ("STPD_LISTEN_FD_NAME", listenFDName),
            ("STPD_SHUTDOWN_GRACE", "\(shutdownGracePeriod)"),
            ("STPD_IDLE_TIMEOUT", idleTimeout.map { "\($0)" } ?? "never"),
            ("STPD_EVENT_MAX_AGE", "\(eventRetention.maxAge)"),
            ("STPD_EVENT_MAX_COUNT", "\(eventRetention.maxCount)"),
            ("STPD_MAX_WAITS_PER_CONNECTION", "\(waitLimits.perConnection)"),
            ("STPD_MAX_WAITS_PER_UID", "\(waitLimits.perUID)"),
            ("STPD_DEBUG_METHODS", debugMethods ? "1" : "0"),
            ("STPD_STRIPE_API_BASE", stripeAPIBase),
            ("STPD_STRIPE_KEY_FILE", stripeKeyFile ?? "(none)"),
            ("STPD_STRIPE_ACCOUNT", stripeAccount ?? "(none)"),
            ("STPD_STRIPE_TIMEOUT", "\(stripeTimeout)"),
            ("STPD_MERCHANT_NAME", merchantName ?? "(none)"),
            ("STPD_URL_OPENER", urlOpener?.joined(separator: " ") ?? "(off)"),
            ("STPD_REDIRECT_POLL_TIMEOUT", "\(redirectPollTimeout)"),
            ("STPD_PENDING_ACTION_TIMEOUT", "\(pendingActionTimeout)"),
        ]
        lines.append(
            ("stripe key", stripeKey.map { "\($0) from \(stripeKeySource.map { "\($0)" } ?? "?")" } ?? "(none)"))
        return lines.map { "\($0)=\($1)" }.joined(separator: "\n")
    }
}

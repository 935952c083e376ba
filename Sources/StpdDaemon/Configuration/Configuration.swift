import Foundation
import Logging
import StpdCore
import StripeAPI

/// Everything the daemon can be told. Each setting has one key (`STPD_SOCKET`, ...), set by a
/// command-line flag (`--socket`), the environment, or the config file, in that order of
/// precedence, then the built-in default. `ConfigurationKeys.all` declares every setting: its
/// flag, range, parser and documentation; the defaults are the initial values below. The files it
/// names are read only if `FileTrust` passes them.
///
/// Why not apple/swift-configuration (1.4.0, weighed for issue 23): it would take over the
/// precedence walk in `resolve` (a flag, then the environment, then the file: some twenty lines)
/// and the reading of `KEY=VALUE` lines, and it would leave every part that makes this
/// configuration what it is still to be written here, while it works against three of them:
/// - strictness: its `.env` reader skips a line it cannot parse and does not undo systemd's
///   quotes, where stpd stops at `file:line`; it offers no list of the keys a source holds, so the
///   unknown-key check with its nearest known key would still read the file and the environment
///   itself; its environment lookup ignores case, where `STPD_max_frame_bytes` is a mistake to name;
/// - ranges and parsing: its typed reads carry no range, and its booleans take `true`, `yes`...,
///   where a switch here takes exactly `1` or `0`; each key's parser and range stay ours;
/// - file trust: its providers open files by path, so the descriptor checked (`FileTrust.open`)
///   would not be the one read;
/// and `stpd --help`, stpd.conf(5), the example file and the settings table come from
/// `ConfigurationKeys.all` either way. Secrets it would redact in its access log are redacted in
/// `description` (`current` never shows one). So the library is not a dependency; revisit if it
/// gains strict key sets and reads from an open descriptor.
public struct DaemonConfiguration: Sendable {
    /// Where to bind when systemd passes no socket. Nil: `$XDG_RUNTIME_DIR/stpd.sock`, or
    /// `/run/stpd/stpd.sock` as root.
    public var socketPath: String?
    public var socketMode: mode_t = 0o600
    public var stateDirectory: String
    public var logLevel: Logger.Level = .info
    public var maxFrameBytes = 1 << 20
    public var maxOutboundBytes = 4 << 20
    public var maxOutboundBytesPerUID = 32 << 20
    /// Any string in any call's params, and any member name (bytes of UTF-8).
    public var maxStringBytes = 16 << 10
    /// An object's stored state and a page of events or objects.
    public var byteLimits = ByteLimits()
    /// The transport's limits (docs/protocol.md, "Limits").
    public var maxInFlight = 64
    public var maxBatchRequests = 1000
    public var maxConnections = 4096
    /// Under half of `maxConnections`, so that no two uids can take them all.
    public var maxConnectionsPerUID = 1024
    /// The last connections, kept for root and stpd's own user.
    public var reservedConnections = 64
    /// Silence after which a connection with nothing in flight and no subscription is closed; nil never.
    public var connectionIdleTimeout: Duration? = .seconds(600)
    /// Time from a frame's first byte to its newline.
    public var frameTimeout: Duration = .seconds(10)
    /// The `FileDescriptorName=` of the socket to take from systemd.
    public var listenFDName = "stpd"
    /// How long in-flight requests may run after SIGTERM before they are cancelled.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// Idle time after which a socket-activated daemon exits; nil never exits.
    public var idleTimeout: Duration? = .seconds(30)
    public var eventRetention = EventRetention()
    /// `events.wait` calls that may wait at once, per connection and per uid.
    public var waitLimits = WaitLimits()
    public var subscriptionLimits = SubscriptionLimits()
    public var pollLimits = PollBudget.Limits()
    /// Enables `debug.emit`.
    public var debugMethods = false
    /// The Stripe API's origin, validated by `validateStripeAPIBase` (no path, http only on loopback).
    public var stripeAPIBase = DaemonConfiguration.defaultStripeAPIBase
    /// Plain http to a loopback stand-in of Stripe (a test server): never with a live key.
    public var allowInsecureStripeBase = false
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
    /// The merchant's name for Sources' `redirect_merchant_name` and payment contexts' `companyName`
    /// unless a call names one; unset, the calling app's (`MerchantName`).
    public var merchantName: String?
    /// The command (and its arguments) stpd runs with a URL appended for `opener: daemon`; nil: off.
    public var urlOpener: [String]?
    /// Seconds a Source is polled after its redirect completes (the seeds suggest a short 10 s).
    public var redirectPollTimeout: Double = 10
    /// The loopback return's port on 127.0.0.1; nil: an ephemeral one, taken when first needed.
    public var loopbackPort: Int?
    /// How long the loopback listener stays up after the last session waiting on it finished.
    public var loopbackGrace: Duration = .seconds(30)
    /// Connections the loopback listener holds at once.
    public var loopbackMaxConnections = 64
    /// Seconds a payment context's pending action waits for the app's answer.
    public var pendingActionTimeout: Double = 600
    /// Who may open customer sessions on the daemon's own key (`keyProvider.kind: server`).
    public var serverKeyAccess = ServerKeyAccess()
    /// A PostgreSQL database shared with other instances (a fleet); nil: SQLite in the state directory.
    public var databaseURL: String?
    /// `STPD_DATABASE_PASSWORD_FILE` (the systemd credential `stpd-database-password` comes first).
    public var databasePasswordFile: String?
    /// This daemon's name in a fleet.
    /// This daemon's name in a fleet; nil: `instanceName(socketPath:)` makes one.
    public var instance: String?
    /// How long a fleet lease lasts unrenewed.
    public var leaseDuration: Duration = .seconds(10)
    /// Unknown keys stop the daemon instead of a warning.
    public var strictConfig = false
    /// The config file that was read, if any.
    public var configFile: String?
    /// systemd's `$CREDENTIALS_DIRECTORY`: where the `stripe-key` and `state-key` credentials are.
    public var credentialsDirectory: String?
    /// Things worth a warning in the log (a key file others can read, ignored key sources, unknown
    /// keys). Resolution runs before logging is set up, so whoever starts the daemon logs these
    /// (`StripeSetup` does).
    public var warnings: [String] = []

    public static let defaultStripeAPIBase = "https://api.stripe.com"

    /// The daemon's name in a fleet: `STPD_INSTANCE`, else the host's name and the socket's path,
    /// readable and distinct for every daemon on every host, and the same across restarts.
    public func instanceName(socketPath: String) -> String {
        instance ?? "\(Self.hostName):\(socketPath)"
    }

    static let hostName = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "stpd"

    /// The SQLite database in the state directory.
    public var databasePath: String { "\(stateDirectory)/stpd.sqlite" }

    /// Keys, flags (empty: none) and what they mean, from `ConfigurationKeys.all`.
    public static var keys: [(key: String, flag: String, meaning: String)] {
        ConfigurationKeys.all.map { ($0.key, $0.flag ?? "", $0.summary) }
    }

    public init(stateDirectory: String) {
        self.stateDirectory = stateDirectory
    }

    /// Resolves the settings from their sources. `flags` uses the same keys as the environment
    /// (`ConfigurationKeys.parseArguments` makes it from a command line).
    public static func resolve(
        flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
        configFile explicitConfigFile: String? = nil
    ) throws -> DaemonConfiguration {
        let configPath = explicitConfigFile ?? flags["STPD_CONFIG"] ?? environment["STPD_CONFIG"]
        let defaultPath = defaultConfigPath(environment)
        let file = try configPath.map { try ConfigFile.read(path: $0) } ?? ConfigFile.readIfPresent(path: defaultPath)

        var c = DaemonConfiguration(stateDirectory: defaultStateDirectory(environment))
        c.configFile = file?.path
        c.credentialsDirectory = environment["CREDENTIALS_DIRECTORY"]
        var givens: [String: (raw: String, origin: ConfigurationKeys.Origin)] = [:]
        for setting in ConfigurationKeys.all where setting.key != "STPD_CONFIG" {
            let key = setting.key
            let given: (raw: String, origin: ConfigurationKeys.Origin)? =
                if setting.sources.contains(.flag), let raw = flags[key] {
                    (raw, .flag(setting.flag ?? key))
                } else if setting.sources.contains(.environment), let raw = environment[key] {
                    (raw, .environment)
                } else if setting.sources.contains(.file), let file, let raw = file.values[key] {
                    (raw, .file(path: file.path, line: file.lines[key] ?? 0))
                } else { nil }
            guard let given else { continue }
            givens[key] = given
            do {
                try setting.apply(&c, given.raw)
            } catch let refusal as ConfigurationKey.Refusal {
                throw ConfigurationError.invalid(key, given.raw, refusal.expected, from: given.origin)
            } catch ConfigurationError.invalid(let key, let raw, let expected, _) {
                throw ConfigurationError.invalid(key, raw, expected, from: given.origin)
            }
        }
        try c.checkRelations(givens)
        let unknown = ConfigurationKeys.unknownKeys(environment: environment, file: file)
        if c.strictConfig, !unknown.isEmpty { throw ConfigurationError.unknownKeys(unknown) }
        c.warnings += unknown
        // The key itself is never taken from `flags`: a command line is visible to every local user
        // (/proc/PID/cmdline, ps), while the environment and the config file are not.
        let setting: (text: String, source: StripeKeySource)? =
            if let text = environment["STPD_STRIPE_KEY"] {
                (text, .environment)
            } else if let file, let text = file.values["STPD_STRIPE_KEY"] {
                (text, .configFile(path: file.path))
            } else { nil }
        try c.resolveStripeKey(credentialsDirectory: c.credentialsDirectory, setting: setting)
        try c.checkStripeBaseTransport()
        return c
    }

    /// Settings whose range depends on another's: one given out of it is refused, naming it (a
    /// default is fitted silently, as the setting's summary says).
    func checkRelations(_ givens: [String: (raw: String, origin: ConfigurationKeys.Origin)]) throws {
        let key = "STPD_RESERVED_CONNECTIONS"
        if let given = givens[key], reservedConnections > maxConnections / 2 {
            throw ConfigurationError.invalid(
                key, given.raw,
                "0 to \(maxConnections / 2) connections: at most half of STPD_MAX_CONNECTIONS=\(maxConnections)",
                from: given.origin)
        }
    }

    /// Every Stripe request carries a key (the daemon's, or a customer's ephemeral one) in its
    /// Authorization header: over plain http (loopback only, see `validateStripeAPIBase`) only when
    /// STPD_ALLOW_INSECURE_STRIPE_BASE=1 says it is a test stand-in, and never with a live key.
    func checkStripeBaseTransport() throws {
        guard stripeAPIBase.lowercased().hasPrefix("http:") else { return }
        if let stripeKey, stripeKey.mode == .live {
            throw ConfigurationError.insecureStripeBase(
                stripeAPIBase, "plain http with the live key \(stripeKey) is refused: use https")
        }
        guard allowInsecureStripeBase else {
            throw ConfigurationError.insecureStripeBase(
                stripeAPIBase,
                "plain http sends the API keys in the clear; set STPD_ALLOW_INSECURE_STRIPE_BASE=1 for a local "
                    + "test stand-in (stripe-test-server, localstripe), or use https")
        }
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

/// Every message names the setting (or file) and the value; none quotes an NSError.
public enum ConfigurationError: Error, CustomStringConvertible {
    case invalid(String, String, String, from: ConfigurationKeys.Origin? = nil)
    case unreadable(String, String)
    /// A file (what it is, its path) that someone besides root and stpd's user can change (FileTrust).
    case untrusted(String, String, String)
    case malformedLine(String, Int)
    /// Plain http to Stripe: refused with a live key, and without STPD_ALLOW_INSECURE_STRIPE_BASE=1.
    case insecureStripeBase(String, String)
    case noSocketPath
    /// The Stripe key from `source` cannot be used; `reason` never quotes the key unredacted.
    case stripeKey(StripeKeySource, String)
    /// Under `--strict-config`: what `ConfigurationKeys.unknownKeys` found.
    case unknownKeys([String])
    case unknownFlag(String, suggestion: String?)
    case missingValue(String, String)
    case switchWithValue(String)
    case unexpectedArgument(String)

    public var description: String {
        switch self {
        // Redacted in case a secret was put under the wrong key (STPD_STRIPE_ACCOUNT=sk_live_...).
        case .invalid(let key, let raw, let expected, let origin):
            return
                "\(key)=\(Redaction.redact(raw))\(origin.map { " (from \($0))" } ?? "") is not valid: expected \(expected)"
        case .stripeKey(let source, let reason): return "Stripe key from \(source): \(reason)"
        case .unreadable(let path, let reason): return "cannot read config file \(path): \(reason)"
        case .untrusted(let what, let path, let reason):
            return
                "refusing the \(what) \(path): \(reason). stpd reads settings and secrets only from files that no "
                + "one but root and its own user can change, as OpenSSH does (docs/SECURITY.md, \"Configuration files\")"
        case .insecureStripeBase(let base, let reason): return "STPD_STRIPE_API_BASE=\(base): \(reason)"
        case .malformedLine(let path, let line): return "\(path):\(line): expected KEY=VALUE"
        case .noSocketPath: return "XDG_RUNTIME_DIR is not set; pass --socket PATH (or STPD_SOCKET)"
        case .unknownKeys(let problems):
            return (problems + ["(an error because of STPD_STRICT_CONFIG=1 / --strict-config)"]).joined(separator: "\n")
        case .unknownFlag(let flag, let suggestion):
            return "unknown option \(flag)"
                + (suggestion.map { ": did you mean \($0)?" } ?? " (stpd --help lists them)")
        case .missingValue(let flag, let valueName): return "\(flag) needs a value: \(flag) \(valueName)"
        case .switchWithValue(let flag): return "\(flag) takes no value"
        case .unexpectedArgument(let argument): return "unexpected argument '\(Redaction.redact(argument))'"
        }
    }
}

/// The config file: `KEY=VALUE` lines with the same keys as the environment, `#` comments,
/// optional double quotes (the shape of a systemd EnvironmentFile, so one file serves both).
enum ConfigFile {
    struct Contents: Sendable {
        var path: String
        /// A key given twice takes its last value, as in an EnvironmentFile.
        var values: [String: String] = [:]
        /// The line of each key's value.
        var lines: [String: Int] = [:]
    }

    static func read(path: String) throws -> Contents {
        // FileHandle reads character devices and pipes too (`--config /dev/null`, `<(...)`).
        let handle: FileHandle
        do throws(FileTrust.Failure) { handle = try FileTrust.open(path) } catch {
            switch error {
            case .unreadable(let reason): throw ConfigurationError.unreadable(path, reason)
            case .untrusted(let reason): throw ConfigurationError.untrusted("config file", path, reason)
            }
        }
        defer { try? handle.close() }
        if let reason = notAFile(handle.fileDescriptor) { throw ConfigurationError.unreadable(path, reason) }
        let data: Data
        do { data = try handle.readToEnd() ?? Data() } catch {
            throw ConfigurationError.unreadable(path, readFailure(error))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError.unreadable(path, "not UTF-8 text")
        }
        var contents = Contents(path: path)
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
            contents.values[key] = value
            contents.lines[key] = index + 1
        }
        return contents
    }

    static func readIfPresent(path: String) throws -> Contents? {
        FileManager.default.fileExists(atPath: path) ? try read(path: path) : nil
    }

    /// Why an open file cannot be read as text: a directory opens but does not read.
    static func notAFile(_ fd: Int32) -> String? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return String(cString: strerror(errno)) }
        return info.st_mode & S_IFMT == S_IFDIR ? "it is a directory" : nil
    }

    /// The system's words for a failed read (not Foundation's error domain and code).
    static func readFailure(_ error: any Error) -> String {
        if let posix = (error as? CocoaError)?.underlying as? POSIXError ?? error as? POSIXError {
            return String(cString: strerror(posix.code.rawValue))
        }
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return "read failed"
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

    /// Reads the key from a file that passes `FileTrust`, or from systemd's credential (its
    /// directory is systemd's, made for the service alone).
    static func readKeyFile(_ path: String, source: StripeKeySource) throws -> String {
        let handle: FileHandle
        do throws(FileTrust.Failure) {
            if case .credential = source, let credential = FileHandle(forReadingAtPath: path) {
                handle = credential
            } else {
                handle = try FileTrust.open(path)
            }
        } catch {
            switch error {
            case .unreadable(let reason): throw ConfigurationError.stripeKey(source, "cannot read it: \(reason)")
            case .untrusted(let reason): throw ConfigurationError.untrusted("Stripe key file", path, reason)
            }
        }
        defer { try? handle.close() }
        if let reason = ConfigFile.notAFile(handle.fileDescriptor) {
            throw ConfigurationError.stripeKey(source, "cannot read it: \(reason)")
        }
        let data: Data
        do { data = try handle.read(upToCount: maxKeyFileBytes + 1) ?? Data() } catch {
            throw ConfigurationError.stripeKey(source, "cannot read it: \(ConfigFile.readFailure(error))")
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
    /// Every setting, the Stripe key redacted; safe to log.
    public var description: String {
        ConfigurationKeys.all.map { "\($0.key)=\($0.current(self))" }.joined(separator: "\n")
            + "\nstripe key source=\(stripeKeySource.map { "\($0)" } ?? "(none)")"
    }
}

import Foundation
import Logging
import StpdCore
import StpdPostgres

/// Every setting stpd reads, each declared once. To add one: give `DaemonConfiguration` a field
/// with its default, and add its declaration here (`.number`, `.seconds`, `.onOff`, `.text`, or
/// a `ConfigurationKey` with its own parser). Its flag, environment variable and config-file key,
/// range check, `--help` line, log line, unknown-key suggestions and docs table row follow
/// (`make settings-table` rewrites docs/configuration.md's table; a test fails while it is stale).
public enum ConfigurationKeys {
    public static let all: [ConfigurationKey] = [
        ConfigurationKey(
            "STPD_CONFIG", flag: "--config", valueName: "PATH", sources: [.flag, .environment],
            defaultValue: "`/etc/stpd/stpd.conf` as root, else `$XDG_CONFIG_HOME/stpd/stpd.conf`, if present",
            accepts: "a path",
            summary: "the config file: `KEY=VALUE` lines, `#` comments (a systemd `EnvironmentFile=`)",
            apply: { c, raw in c.configFile = raw }, current: { $0.configFile ?? "(none)" }),
        .onOff(
            "STPD_STRICT_CONFIG", flag: "--strict-config", \.strictConfig,
            summary: "an unknown key in the environment (`STPD_*`) or the config file stops stpd instead of a warning"),
        ConfigurationKey(
            "STPD_SOCKET", flag: "--socket", valueName: "PATH",
            defaultValue: "`$XDG_RUNTIME_DIR/stpd.sock`; `/run/stpd/stpd.sock` as root",
            accepts: "a path", summary: "the socket to bind when systemd passes none (no socket activation)",
            apply: { c, raw in c.socketPath = raw.isEmpty ? nil : raw }, current: { $0.socketPath ?? "(default)" }),
        ConfigurationKey(
            "STPD_SOCKET_MODE", flag: "--socket-mode", valueName: "MODE", accepts: "an octal mode, 0000 to 0777",
            summary: "file mode of a socket stpd binds itself, applied at bind (no wider window)",
            apply: { c, raw in
                guard let mode = mode_t(raw, radix: 8), mode <= 0o777 else {
                    throw ConfigurationKey.Refusal(expected: "an octal mode such as 0660, at most 0777")
                }
                c.socketMode = mode
            },
            current: { "0" + String($0.socketMode, radix: 8) }),
        ConfigurationKey(
            "STPD_STATE_DIR", flag: "--state-dir", valueName: "PATH",
            defaultValue:
                "`$STATE_DIRECTORY`, else `$XDG_STATE_HOME/stpd`, else `~/.local/state/stpd`; `/var/lib/stpd` as root",
            accepts: "a path", summary: "directory for the database and the state key (made 0700)",
            // Empty keeps the default, computed from the environment before any setting applies.
            apply: { c, raw in if !raw.isEmpty { c.stateDirectory = raw } }, current: { $0.stateDirectory }),
        ConfigurationKey(
            "STPD_DATABASE_URL", flag: "--database-url", valueName: "URL",
            defaultValue: "none: SQLite in the state directory",
            accepts:
                "`postgresql://USER@/DB?host=/socket/dir` or `postgresql://USER@HOST[:PORT]/DB` (TLS), no password",
            summary:
                "a PostgreSQL database shared by a fleet of stpd instances instead of the embedded SQLite (docs/fleet.md)",
            apply: { c, raw in
                guard !raw.isEmpty else {
                    c.databaseURL = nil
                    return
                }
                do {
                    _ = try PostgresLocation(url: raw, password: nil)
                } catch {
                    throw ConfigurationKey.Refusal(expected: "a postgresql:// URL without a password (\(error))")
                }
                c.databaseURL = raw
            },
            current: { c in
                c.databaseURL.flatMap { try? PostgresLocation(url: $0, password: nil).description } ?? "(SQLite)"
            }),
        .text(
            "STPD_DATABASE_PASSWORD_FILE", flag: "--database-password-file", \.databasePasswordFile, valueName: "PATH",
            accepts: "a path",
            summary:
                "a file holding the database's password; `$CREDENTIALS_DIRECTORY/stpd-database-password` comes first. Never a flag or in the URL"
        ),
        ConfigurationKey(
            "STPD_INSTANCE", flag: "--instance", valueName: "NAME",
            defaultValue: "the host name and the socket path (`host:/run/stpd/stpd.sock`)",
            accepts: "1 to 64 letters, digits, `.`, `-` or `_`",
            summary:
                "this daemon's name in a fleet, unique among live instances (a second is refused): in `daemon.status`, its leases and the log",
            apply: { c, raw in
                // Empty, as in the example config's `STPD_INSTANCE=`: the default.
                guard !raw.isEmpty else {
                    c.instance = nil
                    return
                }
                guard (1...64).contains(raw.utf8.count),
                    raw.unicodeScalars.allSatisfy({
                        $0.isASCII
                            && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                                || ".-_".unicodeScalars.contains($0))
                    })
                else { throw ConfigurationKey.Refusal(expected: "1 to 64 letters, digits, '.', '-' or '_'") }
                c.instance = raw
            },
            current: { $0.instance ?? "(host:socket)" }),
        .seconds(
            "STPD_LEASE_SECONDS", flag: "--lease-seconds", \.leaseDuration, range: 2...60,
            summary:
                "in a fleet, how long a lease on background work (a poll) lasts unrenewed: a dead instance's work moves within twice this"
        ),
        ConfigurationKey(
            "STPD_LOG_LEVEL", flag: "--log-level", valueName: "LEVEL",
            accepts: "trace, debug, info, notice, warning, error or critical", summary: "the least severe level logged",
            apply: { c, raw in
                guard let level = Logger.Level(rawValue: raw.lowercased()) else {
                    throw ConfigurationKey.Refusal(expected: "trace, debug, info, notice, warning, error or critical")
                }
                c.logLevel = level
            },
            current: { $0.logLevel.rawValue }),
        .number(
            "STPD_MAX_FRAME_BYTES", flag: "--max-frame-bytes", \.maxFrameBytes, range: 1024...(64 << 20), unit: "bytes",
            summary: "largest request line accepted; a longer one gets -32600 and the connection closes"),
        .number(
            "STPD_MAX_OUTBOUND_BYTES", flag: "--max-outbound-bytes", \.maxOutboundBytes, range: 4096...(64 << 20),
            unit: "bytes",
            summary: "bytes queued per connection before a subscriber gets `events.dropped` and is disconnected"),
        .number(
            "STPD_MAX_OUTBOUND_BYTES_PER_UID", flag: "--max-outbound-bytes-per-uid", \.maxOutboundBytesPerUID,
            range: (64 << 10)...(1 << 34), unit: "bytes",
            summary:
                "bytes queued or reserved over all the connections of one uid; past it each of them waits (or its subscriber is dropped) as one connection does past `STPD_MAX_OUTBOUND_BYTES`"
        ),
        .number(
            "STPD_MAX_STRING_BYTES", flag: "--max-string-bytes", \.maxStringBytes, range: 256...(1 << 20),
            unit: "bytes",
            summary:
                "longest string (or member name) accepted anywhere in a call's params; a longer one gets -32602 naming the parameter"
        ),
        .number(
            "STPD_MAX_OBJECT_BYTES", flag: "--max-object-bytes", \.byteLimits.objectBytes,
            range: ByteLimits.objectBytesRange, unit: "bytes",
            summary:
                "largest state an object may store (as JSON); a change past it is refused with ObjectTooLarge and nothing is written"
        ),
        .number(
            "STPD_MAX_PAGE_BYTES", flag: "--max-page-bytes", \.byteLimits.pageBytes, range: ByteLimits.pageBytesRange,
            unit: "bytes",
            summary:
                "bytes of events or objects one page holds (`events.wait`, a subscription's replay, a list); a fuller page ends early and says so"
        ),
        .number(
            "STPD_MAX_IN_FLIGHT", flag: "--max-in-flight", \.maxInFlight, range: 1...4096, unit: "calls",
            summary:
                "calls of one connection running at once, each batch entry counting; past it the connection's further requests wait unread"
        ),
        .number(
            "STPD_MAX_BATCH", flag: "--max-batch", \.maxBatchRequests, range: 1...100_000, unit: "requests",
            summary: "most requests in one batch; a larger batch gets one -32600 and none of it runs"),
        .number(
            "STPD_MAX_CONNECTIONS", flag: "--max-connections", \.maxConnections, range: 1...65536,
            unit: "connections",
            summary: "connections open at once; a new one past it gets one -32000 line, then EOF (logged)"),
        .number(
            "STPD_MAX_CONNECTIONS_PER_UID", flag: "--max-connections-per-uid", \.maxConnectionsPerUID,
            range: 1...65536, unit: "connections",
            summary:
                "connections one uid may hold open at once (the same refusal, `scope: uid`); under half of `STPD_MAX_CONNECTIONS` by default, so no two uids take them all"
        ),
        .number(
            "STPD_RESERVED_CONNECTIONS", flag: "--reserved-connections", \.reservedConnections, range: 0...32768,
            unit: "connections",
            summary:
                "the last of `STPD_MAX_CONNECTIONS`, kept for root and stpd's own user: others are refused once only these are left; more than half of `STPD_MAX_CONNECTIONS` is refused at start (the default is cut to half)"
        ),
        .number(
            "STPD_MAX_WAITS_PER_CONNECTION", flag: "--max-waits-per-connection", \.waitLimits.perConnection,
            range: WaitLimits.perConnectionRange, unit: "calls",
            summary: "`events.wait` calls waiting at once on one connection; one more gets TooManyWaits"),
        .number(
            "STPD_MAX_WAITS_PER_UID", flag: "--max-waits-per-uid", \.waitLimits.perUID,
            range: WaitLimits.perUIDRange, unit: "calls",
            summary: "`events.wait` calls waiting at once for one uid, over all its connections"),
        .number(
            "STPD_MAX_POLLS_PER_UID", flag: "--max-polls-per-uid", \.pollLimits.pollsPerUID,
            range: PollBudget.Limits.pollsPerUIDRange, unit: "polls",
            summary:
                "intent and Source polls one uid may have running at once (a paused one does not count); one more gets TooManyPolls"
        ),
        .number(
            "STPD_POLL_REQUESTS_PER_SECOND_PER_UID", flag: "--poll-requests-per-second-per-uid",
            \.pollLimits.requestsPerSecondPerUID, range: PollBudget.Limits.requestsPerSecondRange, unit: "requests",
            summary:
                "Stripe requests per second one uid's polls send together (bursts of twice as many); past it they wait their turn"
        ),
        .number(
            "STPD_MAX_SUBSCRIPTIONS_PER_CONNECTION", flag: "--max-subscriptions-per-connection",
            \.subscriptionLimits.perConnection, range: SubscriptionLimits.perConnectionRange, unit: "subscriptions",
            summary: "`events.subscribe` subscriptions one connection holds at once; one more gets TooManySubscriptions"
        ),
        .number(
            "STPD_MAX_SUBSCRIPTIONS_PER_UID", flag: "--max-subscriptions-per-uid", \.subscriptionLimits.perUID,
            range: SubscriptionLimits.perUIDRange, unit: "subscriptions",
            summary: "subscriptions one uid holds at once, over all its connections"),
        .number(
            "STPD_MAX_SUBSCRIPTION_BYTES_PER_UID", flag: "--max-subscription-bytes-per-uid",
            \.subscriptionLimits.filterBytesPerUID, range: SubscriptionLimits.filterBytesPerUIDRange, unit: "bytes",
            summary:
                "bytes of filters (object ids and types) one uid's subscriptions hold together; one filter holds at most 64 KiB"
        ),
        ConfigurationKey(
            "STPD_CONNECTION_IDLE_TIMEOUT", flag: "--connection-idle-timeout", valueName: "SECONDS",
            accepts: "0 to 86400 seconds", range: 0...86400,
            summary:
                "how long a connection with no call running and no subscription may stay silent before it is closed; 0 never",
            apply: { c, raw in
                let seconds = try ConfigurationKey.whole(raw, 0...86400, "seconds (0: never)")
                c.connectionIdleTimeout = seconds == 0 ? nil : .seconds(seconds)
            },
            current: { $0.connectionIdleTimeout.map { "\($0.components.seconds)" } ?? "0" }),
        .seconds(
            "STPD_FRAME_TIMEOUT", flag: "--frame-timeout", \.frameTimeout, range: 1...3600,
            summary:
                "how long a request line may take from its first byte to its newline; a slower one gets -32600 and the connection closes"
        ),
        ConfigurationKey(
            "STPD_LISTEN_FD_NAME", flag: "--listen-fd-name", valueName: "NAME",
            accepts: "1 to 255 printable ASCII characters, no `:`",
            summary: "the `FileDescriptorName=` of the socket to take from systemd",
            apply: { c, raw in
                guard (1...255).contains(raw.utf8.count),
                    raw.utf8.allSatisfy({ (0x21...0x7e).contains($0) && $0 != 0x3a })
                else { throw ConfigurationKey.Refusal(expected: "1 to 255 printable ASCII characters without ':'") }
                c.listenFDName = raw
            },
            current: { $0.listenFDName }),
        .seconds(
            "STPD_SHUTDOWN_GRACE", flag: "--shutdown-grace", \.shutdownGracePeriod, range: 1...3600,
            summary: "how long in-flight requests may finish after SIGTERM"),
        ConfigurationKey(
            "STPD_IDLE_TIMEOUT", flag: "--idle-timeout", valueName: "SECONDS", accepts: "0 to 86400 seconds",
            range: 0...86400,
            summary: "idle time after which a socket-activated stpd exits; 0 never exits",
            apply: { c, raw in
                let seconds = try ConfigurationKey.whole(raw, 0...86400, "seconds (0: never)")
                c.idleTimeout = seconds == 0 ? nil : .seconds(seconds)
            },
            current: { $0.idleTimeout.map { "\($0.components.seconds)" } ?? "0" }),
        .seconds(
            "STPD_EVENT_MAX_AGE", flag: "--event-max-age", \.eventRetention.maxAge, range: 1...(366 * 86400),
            summary: "how long events are kept, and finished objects too (default 7 days)"),
        .number(
            "STPD_EVENT_MAX_COUNT", flag: "--event-max-count", \.eventRetention.maxCount, range: 1...10_000_000,
            unit: "events", summary: "most events kept in the log"),
        .onOff(
            "STPD_DEBUG_METHODS", flag: "--debug-methods", \.debugMethods,
            summary: "`1` enables `debug.emit`, a test event source for client authors"),
        ConfigurationKey(
            "STPD_STRIPE_API_BASE", flag: "--stripe-api-base", valueName: "URL",
            accepts: "an origin `http(s)://host[:port]`, no path; plain `http` only for a loopback host",
            summary:
                "the Stripe API's origin; `http` only for `127.0.0.1`, `::1` or `localhost` with `STPD_ALLOW_INSECURE_STRIPE_BASE=1` and no live key (e.g. `stripe-test-server`): every request carries a key",
            apply: { c, raw in c.stripeAPIBase = try DaemonConfiguration.validateStripeAPIBase(raw) },
            current: { $0.stripeAPIBase }),
        .onOff(
            "STPD_ALLOW_INSECURE_STRIPE_BASE", flag: "--allow-insecure-stripe-base", \.allowInsecureStripeBase,
            summary:
                "`1` lets `STPD_STRIPE_API_BASE` be plain `http` (loopback only), for a test stand-in of Stripe; never with a live key"
        ),
        .text(
            "STPD_STRIPE_KEY_FILE", flag: "--stripe-key-file", \.stripeKeyFile, valueName: "PATH", accepts: "a path",
            summary:
                "a file holding the Stripe key; refused when anyone but root and stpd's user can change it, warned about when group or others may read it"
        ),
        ConfigurationKey(
            "STPD_STRIPE_KEY", flag: nil, sources: [.environment, .file], defaultValue: "none",
            accepts: "`pk_…`, `sk_…` or `rk_…` (never `ek_`)",
            summary:
                "the Stripe key; no flag, since a command line is visible to every local user. `$CREDENTIALS_DIRECTORY/stripe-key` comes first, then `STPD_STRIPE_KEY_FILE`, then this. Logged only redacted (`sk_live_…1234`); without a key Stripe methods answer 3009",
            // Resolved after the others, with the credential and the key file it competes with.
            apply: { _, _ in }, current: { $0.stripeKey.map { "\($0)" } ?? "(none)" }),
        ConfigurationKey(
            "STPD_STRIPE_ACCOUNT", flag: "--stripe-account", valueName: "ACCOUNT", defaultValue: "none",
            accepts: "`acct_` and letters or digits",
            summary: "a Connect account sent as `Stripe-Account`",
            apply: { c, raw in
                guard !raw.isEmpty else {
                    c.stripeAccount = nil
                    return
                }
                guard raw.hasPrefix("acct_"), raw.count > 5,
                    raw.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
                else {
                    throw ConfigurationKey.Refusal(expected: "a connected account id such as acct_1032D82eZvKYlo2C")
                }
                c.stripeAccount = raw
            },
            current: { $0.stripeAccount ?? "(none)" }),
        .seconds(
            "STPD_STRIPE_TIMEOUT", flag: "--stripe-timeout", \.stripeTimeout, range: 1...600,
            summary: "per attempt of a Stripe call (each retry gets a fresh one)"),
        .text(
            "STPD_MERCHANT_NAME", flag: "--merchant-name", \.merchantName, valueName: "NAME", accepts: "text",
            summary:
                "the merchant's name: Sources' `redirect_merchant_name` and payment contexts' `companyName`, unless a call names one (unset: the calling app's name)"
        ),
        ConfigurationKey(
            "STPD_URL_OPENER", flag: "--url-opener", valueName: "COMMAND", defaultValue: "off",
            accepts: "a command and its arguments",
            summary:
                "run (split on spaces, no shell) with a URL appended for `redirect.start` with `opener: \"daemon\"`, e.g. `xdg-open`",
            apply: { c, raw in
                let words = raw.split(separator: " ").map(String.init)
                c.urlOpener = words.isEmpty ? nil : words
            },
            current: { $0.urlOpener?.joined(separator: " ") ?? "(off)" }),
        ConfigurationKey(
            "STPD_LOOPBACK_PORT", flag: "--loopback-port", valueName: "PORT",
            accepts: "0 to 65535 (0: an ephemeral port)", range: 0...65535,
            summary:
                "the port on 127.0.0.1 where customers come back for `returnURL: \"loopback\"`; 0 takes an ephemeral one when a loopback session needs it",
            apply: { c, raw in
                let port = try ConfigurationKey.whole(raw, 0...65535, "(0: ephemeral)")
                c.loopbackPort = port == 0 ? nil : port
            },
            current: { "\($0.loopbackPort ?? 0)" }),
        .seconds(
            "STPD_LOOPBACK_GRACE", flag: "--loopback-grace", \.loopbackGrace, range: 0...30,
            summary:
                "how long the loopback listener stays up after the last loopback session stopped waiting (a reload of its page still gets its answer)"
        ),
        .number(
            "STPD_LOOPBACK_MAX_CONNECTIONS", flag: "--loopback-max-connections", \.loopbackMaxConnections,
            range: 1...4096, unit: "connections",
            summary: "connections the loopback listener holds at once; one more is closed unanswered"),
        .seconds(
            "STPD_REDIRECT_POLL_TIMEOUT", flag: "--redirect-poll-timeout", \.redirectPollTimeout, range: 1...300,
            summary: "how long a Source is polled after its redirect completes"),
        .seconds(
            "STPD_PENDING_ACTION_TIMEOUT", flag: "--pending-action-timeout", \.pendingActionTimeout, range: 1...86400,
            summary: "how long a payment context's pending action waits for `paymentContext.answer`"),
        ConfigurationKey(
            "STPD_SERVER_KEY_UIDS", flag: "--server-key-uids", valueName: "USERS",
            defaultValue: "none: root and stpd's own uid only",
            accepts: "uids or user names, separated by commas",
            summary:
                "who else may open `keyProvider: {kind: server}` customer sessions, which use stpd's own secret key for any customer",
            apply: { c, raw in c.serverKeyAccess.uids = try ServerKeyAccess.parseUsers(raw) },
            current: { $0.serverKeyAccess.uids.sorted().map(String.init).joined(separator: ",") }),
        ConfigurationKey(
            "STPD_SERVER_KEY_CUSTOMERS", flag: "--server-key-customers", valueName: "CUSTOMERS", defaultValue: "none",
            accepts: "customer ids (`cus_…`), separated by commas",
            summary: "customers any uid may open a `keyProvider: {kind: server}` session for",
            apply: { c, raw in c.serverKeyAccess.customers = try ServerKeyAccess.parseCustomers(raw) },
            current: { $0.serverKeyAccess.customers.sorted().joined(separator: ",") }),
    ]

    /// Names in the environment that are not stpd's settings but are not mistakes either.
    static let othersInEnvironment: Set<String> = [
        "STPD_AUTHORIZATION"  // stpctl's bearer token for `customer open`
    ]

    public static func named(_ key: String) -> ConfigurationKey? { all.first { $0.key == key } }
}

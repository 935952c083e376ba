import ArgumentParser
import Foundation
import StpdDaemon
import StpdProtocol

/// `stpd`: the daemon. Flags override `STPD_*` environment variables, which override the
/// config file (`--config`, `STPD_CONFIG`, or `/etc/stpd/stpd.conf` / `$XDG_CONFIG_HOME/stpd/stpd.conf`).
@main
struct StpdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stpd",
        abstract: "The Stripe iOS SDK's client-side payment machinery as a JSON-RPC 2.0 daemon.",
        discussion: """
            Serves JSON-RPC 2.0 (one JSON text per line) on a Unix socket: the one systemd passes \
            (socket activation, chosen by FileDescriptorName=), else one it binds itself.
            Each option can also be set as an environment variable or in the config file (KEY=VALUE lines):
            \(DaemonConfiguration.keys.map { "  \($0.key.padding(toLength: 24, withPad: " ", startingAt: 0))\($0.flag.isEmpty ? "(no flag: environment or config file only)" : $0.flag)" }.joined(separator: "\n"))
            Precedence: flag, then environment, then config file, then default.
            The Stripe key is read from $CREDENTIALS_DIRECTORY/stripe-key (systemd LoadCredential=), \
            else --stripe-key-file, else STPD_STRIPE_KEY. It has no flag: a command line is visible \
            to every local user.
            """,
        version: StpdAPI.version)

    @Option(
        help:
            "Socket path to bind when not socket-activated (default $XDG_RUNTIME_DIR/stpd.sock; /run/stpd/stpd.sock as root)."
    )
    var socket: String?
    @Option(help: "Octal mode of a socket stpd binds itself (default 0600).")
    var socketMode: String?
    @Option(help: "Directory for durable state (default $STATE_DIRECTORY, else $XDG_STATE_HOME/stpd).")
    var stateDir: String?
    @Option(help: "Config file of KEY=VALUE lines.")
    var config: String?
    @Option(help: "trace, debug, info, notice, warning, error or critical (default info).")
    var logLevel: String?
    @Option(help: "Largest request line accepted, in bytes (default 1048576).")
    var maxFrameBytes: String?
    @Option(help: "Bytes queued per connection before its notifications are refused (default 4194304).")
    var maxOutboundBytes: String?
    @Option(help: "FileDescriptorName= of the systemd-passed socket to use (default stpd).")
    var listenFDName: String?
    @Option(help: "Seconds in-flight requests may finish after SIGTERM (default 10).")
    var shutdownGrace: String?
    @Option(help: "Seconds idle before a socket-activated stpd exits; 0 never (default 30).")
    var idleTimeout: String?
    @Option(help: "Seconds events are kept in the log (default 604800).")
    var eventMaxAge: String?
    @Option(help: "Most events kept in the log (default 100000).")
    var eventMaxCount: String?
    @Option(help: "events.wait calls waiting at once on one connection, 1-1000 (default 16).")
    var maxWaitsPerConnection: String?
    @Option(help: "events.wait calls waiting at once for one uid, 1-100000 (default 256).")
    var maxWaitsPerUid: String?
    @Flag(help: "Enable debug.emit, a test event source for client authors.")
    var debugMethods = false
    @Option(help: "Stripe API origin (default https://api.stripe.com; plain http only for a loopback host).")
    var stripeAPIBase: String?
    @Option(
        help: ArgumentHelp(
            "File holding the Stripe key (pk_, sk_ or rk_); $CREDENTIALS_DIRECTORY/stripe-key comes first.",
            valueName: "path"))
    var stripeKeyFile: String?
    @Option(help: "Connected account id (acct_...) sent as Stripe-Account.")
    var stripeAccount: String?
    @Option(help: "Seconds per attempt of a Stripe call (default 30).")
    var stripeTimeout: String?
    @Option(help: "redirect_merchant_name added to Sources' return URLs (default none).")
    var merchantName: String?
    @Option(help: "Command run with a URL for redirect.start opener daemon, e.g. xdg-open (default off).")
    var urlOpener: String?
    @Option(help: "Seconds a Source is polled after its redirect completes (default 10).")
    var redirectPollTimeout: String?
    @Option(help: "Seconds a payment context's pending action waits for its answer (default 600).")
    var pendingActionTimeout: String?
    @Flag(help: "Print the OpenRPC contract and exit.")
    var printContract = false

    func run() async throws {
        if printContract {
            FileHandle.standardOutput.write(try Contract.renderedDocument())
            return
        }
        let flags: [String: String?] = [
            "STPD_SOCKET": socket, "STPD_SOCKET_MODE": socketMode, "STPD_STATE_DIR": stateDir,
            "STPD_LOG_LEVEL": logLevel, "STPD_MAX_FRAME_BYTES": maxFrameBytes,
            "STPD_MAX_OUTBOUND_BYTES": maxOutboundBytes, "STPD_LISTEN_FD_NAME": listenFDName,
            "STPD_SHUTDOWN_GRACE": shutdownGrace, "STPD_IDLE_TIMEOUT": idleTimeout,
            "STPD_EVENT_MAX_AGE": eventMaxAge, "STPD_EVENT_MAX_COUNT": eventMaxCount,
            "STPD_MAX_WAITS_PER_CONNECTION": maxWaitsPerConnection, "STPD_MAX_WAITS_PER_UID": maxWaitsPerUid,
            "STPD_DEBUG_METHODS": debugMethods ? "1" : nil,
            "STPD_STRIPE_API_BASE": stripeAPIBase, "STPD_STRIPE_KEY_FILE": stripeKeyFile,
            "STPD_STRIPE_ACCOUNT": stripeAccount, "STPD_STRIPE_TIMEOUT": stripeTimeout,
            "STPD_MERCHANT_NAME": merchantName, "STPD_URL_OPENER": urlOpener,
            "STPD_REDIRECT_POLL_TIMEOUT": redirectPollTimeout, "STPD_PENDING_ACTION_TIMEOUT": pendingActionTimeout,
        ]
        do {
            let configuration = try DaemonConfiguration.resolve(
                flags: flags.compactMapValues { $0 }, configFile: config)
            try await Daemon.run(configuration)
        } catch let error as CustomStringConvertible & Error {
            FileHandle.standardError.write(Data("stpd: \(error.description)\n".utf8))
            throw ExitCode.failure
        }
    }
}

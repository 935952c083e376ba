import ArgumentParser
import StpctlKit
import StpdProtocol

/// `stpctl`: the shell client of stpd.
///
/// Exit statuses (see `ExitStatus`, also printed by `stpctl --help`): 0 success; 1 the daemon
/// answered with an error (or an awaited poll or redirect ended with one); 2 usage error;
/// 3 cannot connect; 4 timeout; 5 `handle-url` matched no session; 6 the connection broke or
/// the reply was malformed.
///
/// New command groups (customer, source, ...) go in their own file as a command whose
/// subcommands conform to `ClientCommand`, and are listed in `subcommands` below.
struct Stpctl: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "stpctl",
        abstract: "The shell client of stpd: calls its JSON-RPC methods over its Unix socket.",
        discussion: """
            Socket: --socket PATH, else $STPD_SOCKET, else /run/stpd/stpd.sock when run as root, \
            else $XDG_RUNTIME_DIR/stpd.sock when it exists (the same defaults as stpd), else the \
            system instance's /run/stpd/stpd.sock.

            Output: human-readable on a terminal; JSON (one compact line per result) when stdout \
            is not a terminal, or with --json. Errors go to stderr: "error <code>: <message>", or \
            the JSON-RPC error object in JSON mode.

            Exit status:
            \(ExitStatus.helpTable)

            Shell completion: stpctl --generate-completion-script bash|zsh|fish
              e.g. stpctl --generate-completion-script bash > /etc/bash_completion.d/stpctl
            """,
        version: StpdAPI.version,
        subcommands: [
            CallCommand.self, PingCommand.self, StatusCommand.self, MetricsCommand.self, DiscoverCommand.self,
            DescribeCommand.self, WatchCommand.self,
            EventsCommand.self, CustomerCommand.self, ContextCommand.self, SourceCommand.self, RedirectCommand.self,
            IntentCommand<PaymentIntentNaming>.self, IntentCommand<SetupIntentNaming>.self,
            HandleURLCommand.self, AppCommand.self, CardCommand.self,
        ]
    )

    @OptionGroup(title: "Global Options") var global: GlobalOptions
}

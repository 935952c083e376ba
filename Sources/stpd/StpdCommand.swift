import ArgumentParser
import Foundation
import StpdDaemon
import StpdProtocol

/// `stpd`: the daemon. Flags override `STPD_*` environment variables, which override the
/// config file (`--config`, `STPD_CONFIG`, or `/etc/stpd/stpd.conf` / `$XDG_CONFIG_HOME/stpd/stpd.conf`).
/// The settings' flags are not ArgumentParser options: they are parsed from their declarations
/// (`ConfigurationKeys.all`), so a setting is declared in one place.
@main
struct StpdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stpd",
        abstract: "The Stripe iOS SDK's client-side payment machinery as a JSON-RPC 2.0 daemon.",
        usage: "stpd [--SETTING VALUE ...] [--print-contract]",
        discussion: """
            Serves JSON-RPC 2.0 (one JSON text per line) on a Unix socket: the one systemd passes \
            (socket activation, chosen by FileDescriptorName=), else one it binds itself.

            Settings: each is a flag, an environment variable, or a KEY=VALUE line of the config file. \
            Precedence: flag, then environment, then config file, then default. Unknown STPD_* keys \
            get a warning (an error with --strict-config).

            \(ConfigurationKeys.helpText)

            The Stripe key is read from $CREDENTIALS_DIRECTORY/stripe-key (systemd LoadCredential=), \
            else --stripe-key-file, else STPD_STRIPE_KEY. It has no flag: a command line is visible \
            to every local user. Secrets kept in the database are sealed with the key in \
            $CREDENTIALS_DIRECTORY/state-key, else the state directory's state-key file.
            """,
        version: StpdAPI.version)

    @Flag(help: "Print the OpenRPC contract and exit.")
    var printContract = false
    @Flag(
        help: """
            In a fleet (STPD_DATABASE_URL): re-seal every row of the database sealed with another \
            key than the current state key (or in the clear), while the fleet runs, then exit. \
            docs/fleet.md says when.
            """)
    var rotateStateKey = false
    @Flag(help: .private)
    var printSettingsTable = false
    /// The packages' /etc/stpd/stpd.conf and stpd.conf(5) (`make deb`, `make install`).
    @Flag(help: .private)
    var printExampleConfig = false
    @Flag(help: .private)
    var printConfigManual = false
    @Option(
        name: .customLong("recover-with-key"),
        help: ArgumentHelp(
            "Re-seal the rows sealed with the state key in FILE (lost or replaced, found again) with the current state key, then exit.",
            valueName: "FILE"))
    var recoverWithKey: String?
    /// The settings' flags, parsed by `ConfigurationKeys.parseArguments`.
    @Argument(parsing: .allUnrecognized, help: .private)
    var settings: [String] = []

    func run() async throws {
        if printContract {
            FileHandle.standardOutput.write(try Contract.renderedDocument())
            return
        }
        if printSettingsTable {
            print(ConfigurationKeys.markdownTable)
            return
        }
        if printExampleConfig {
            print(ConfigurationKeys.exampleConfigFile, terminator: "")
            return
        }
        if printConfigManual {
            print(ConfigurationKeys.configManualPage(version: StpdAPI.version), terminator: "")
            return
        }
        do {
            let flags = try ConfigurationKeys.parseArguments(
                settings,
                extraFlags: ["--print-contract", "--rotate-state-key", "--recover-with-key", "--help", "--version"])
            let configuration = try DaemonConfiguration.resolve(flags: flags)
            if rotateStateKey {
                print(try await Daemon.rotateStateKey(configuration))
                return
            }
            if let recoverWithKey {
                print(try await Daemon.recover(configuration, oldKeyFile: recoverWithKey))
                return
            }
            try await Daemon.run(configuration)
        } catch let error as CustomStringConvertible & Error {
            FileHandle.standardError.write(Data("stpd: \(error.description)\n".utf8))
            throw ExitCode.failure
        }
    }
}

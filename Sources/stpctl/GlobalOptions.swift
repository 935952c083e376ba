import ArgumentParser
import Foundation
import StpctlKit

/// Options every command takes. Declared with `@OptionGroup` on the root and on each command,
/// so they may come before or after the subcommand name (`stpctl --json ping`, `stpctl ping --json`)
/// and show in each command's help.
struct GlobalOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("Path of stpd's socket (default: see stpctl --help).", valueName: "path"),
        completion: .file())
    var socket: String?

    @Flag(help: "Print JSON even on a terminal (pretty there, one compact line per result otherwise).")
    var json = false

    @Flag(
        help:
            "Print client secrets and credentials instead of [REDACTED] (they are redacted by default, JSON included).")
    var showSecrets = false

    @Option(
        help: ArgumentHelp(
            "Seconds to wait for the daemon, connecting included (default 30); 0 waits forever. Bounds the whole wait of `wait` commands (default: no bound).",
            valueName: "seconds"))
    var timeout: Double?

    /// A wait command's bound is the `--timeout` given, not the per-call default.
    var callTimeout: Double { timeout ?? 30 }

    mutating func validate() throws {
        if let timeout, !timeout.isFinite || timeout < 0 {
            throw ValidationError("--timeout must be 0 or more seconds")
        }
    }

    var output: Output { Output(forceJSON: json, showSecrets: showSecrets) }

    /// Resolved when a command runs, not when parsing, so `help` and completions never need a socket.
    func connection() throws -> Connection {
        let path = SocketPath.resolve(
            explicit: socket, environment: ProcessInfo.processInfo.environment, uid: getuid())
        return Connection(socketPath: path, timeoutSeconds: callTimeout)
    }
}

/// A command that talks to the daemon; `main` reads its options to report errors as asked.
protocol ClientCommand: ParsableCommand {
    var global: GlobalOptions { get }
}

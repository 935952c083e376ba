import ArgumentParser
import JSONRPC
import RPCTransport

/// stpctl's exit statuses, which scripts switch on:
///
/// - 0: success
/// - 1: the daemon answered with an error (printed on stderr), or what a wait command awaited
///   (a Source's poll, a redirect session) ended with one
/// - 2: usage error: bad arguments or options, or no socket path could be determined
/// - 3: cannot connect to the socket (the message names the path and the reason)
/// - 4: timed out waiting for the daemon, or for the end a wait command awaits (`--timeout`)
/// - 5: `handle-url`: no redirect session in progress matched the URL
/// - 6: the connection broke, or the reply was not what the protocol promises
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    case daemonError = 1
    case usage = 2
    case cannotConnect = 3
    case timeout = 4
    case noSessionMatched = 5
    case connectionBroken = 6

    /// One line per status; the root command's help prints these.
    public var summary: String {
        switch self {
        case .success: "success"
        case .daemonError: "the daemon answered with an error, or the awaited poll or redirect ended with one"
        case .usage: "usage error: bad arguments or options, or no socket path known"
        case .cannotConnect: "cannot connect to the daemon's socket"
        case .timeout: "no reply (or, for wait commands, no end) within --timeout seconds"
        case .noSessionMatched: "handle-url: no redirect session in progress matched the URL"
        case .connectionBroken: "the connection broke or the reply was malformed"
        }
    }

    public static var helpTable: String {
        allCases.map { "  \($0.rawValue)  \($0.summary)" }.joined(separator: "\n")
    }

    /// For an error thrown while parsing the command line. Help, `--version` and completion
    /// scripts arrive as errors too and are successes; ArgumentParser gives everything else
    /// its own code (64, EX_USAGE), which stpctl reports as 2.
    public static func forParse(_ error: any Error, of command: any ParsableCommand.Type) -> ExitStatus {
        command.exitCode(for: error).isSuccess ? .success : .usage
    }

    /// For an error thrown while running a command. ArgumentParser's own errors (help asked
    /// through `stpctl help`, a `ValidationError`) are classified by `command`; anything else
    /// unforeseen happened on the connection (a reply that does not decode, a failed write), hence 6.
    public static func forRun(_ error: any Error, of command: any ParsableCommand.Type) -> ExitStatus {
        switch error {
        case is RPCError: return .daemonError
        case let failure as StpctlFailure: return failure.exitStatus
        case let failure as RPCClientError:
            if case .cannotConnect = failure { return .cannotConnect }
            return .connectionBroken
        case is CallParams.ParseError: return .usage
        case let code as ExitCode: return ExitStatus(rawValue: code.rawValue) ?? .connectionBroken
        default:
            let code = command.exitCode(for: error)
            if code.isSuccess { return .success }
            return code == .validationFailure ? .usage : .connectionBroken
        }
    }
}

/// Failures stpctl detects itself (as opposed to the daemon's `RPCError` replies).
public enum StpctlFailure: Error, Equatable, CustomStringConvertible {
    case usage(String)
    case timeout(seconds: Double, socket: String)
    case noSessionMatched(String)
    /// A connection meant to stay open ended (`watch --no-reconnect`); the message says how.
    case connectionEnded(String)
    /// What a wait command awaited ended without a result (a poll stopped, a session cancelled).
    case ended(String)
    /// A wait command's `--timeout` passed first; the message says what was last seen.
    case waitTimedOut(String)

    public var exitStatus: ExitStatus {
        switch self {
        case .usage: .usage
        case .timeout: .timeout
        case .noSessionMatched: .noSessionMatched
        case .connectionEnded: .connectionBroken
        case .ended: .daemonError
        case .waitTimedOut: .timeout
        }
    }

    public var description: String {
        switch self {
        case .usage(let message): message
        case .timeout(let seconds, let socket):
            "no reply from stpd at \(socket) within \(Render.seconds(seconds)) (--timeout)"
        case .noSessionMatched(let message): message
        case .connectionEnded(let message): message
        case .ended(let message): message
        case .waitTimedOut(let message): message
        }
    }
}

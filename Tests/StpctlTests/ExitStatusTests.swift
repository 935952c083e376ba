import ArgumentParser
import JSONRPC
import RPCTransport
import StpctlKit
import Testing

// Swift Testing has an ExitStatus of its own (exit tests).
typealias ExitStatus = StpctlKit.ExitStatus

/// A command tree shaped like stpctl's, to see ArgumentParser's errors through the mapping.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(subcommands: [Sub.self])

    struct Sub: ParsableCommand {
        @Option var count: Int = 0
        func validate() throws {
            if count < 0 { throw ValidationError("--count must not be negative") }
        }
    }
}

@Suite struct ExitStatusTests {
    /// What stpctl's main does: parse, then run, mapping whichever step throws.
    func status(_ arguments: [String]) -> ExitStatus {
        var command: any ParsableCommand
        do { command = try Demo.parseAsRoot(arguments) } catch { return ExitStatus.forParse(error, of: Demo.self) }
        do { try command.run() } catch { return ExitStatus.forRun(error, of: Demo.self) }
        return .success
    }

    @Test func theDocumentedNumbers() {
        #expect(ExitStatus.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
        for status in ExitStatus.allCases {
            #expect(ExitStatus.helpTable.contains("  \(status.rawValue)  \(status.summary)"))
        }
    }

    @Test(arguments: [
        ["bogus-subcommand"], ["sub", "--count", "x"], ["sub", "--count=-1"], ["sub", "--nope"], ["sub", "extra"],
    ])
    func argumentParserErrorsAreUsageErrors(arguments: [String]) {
        #expect(status(arguments) == .usage)
    }

    @Test(arguments: [
        ["--help"], ["sub", "--help"], ["help", "sub"], [], ["--generate-completion-script", "bash"], ["sub"],
    ])
    func helpCompletionAndSuccessExitZero(arguments: [String]) {
        #expect(status(arguments) == .success)
    }

    @Test func daemonErrorRepliesAreOne() {
        #expect(ExitStatus.forRun(RPCError.methodNotFound("x"), of: Demo.self) == .daemonError)
        #expect(ExitStatus.forRun(RPCError(code: 1001, message: "No such object"), of: Demo.self) == .daemonError)
    }

    @Test func transportFailures() {
        let cannotConnect = RPCClientError.cannotConnect(path: "/nonexistent", reason: "No such file or directory")
        #expect(ExitStatus.forRun(cannotConnect, of: Demo.self) == .cannotConnect)
        #expect(ExitStatus.forRun(RPCClientError.connectionClosed, of: Demo.self) == .connectionBroken)
        #expect(ExitStatus.forRun(RPCClientError.unexpectedResult("x"), of: Demo.self) == .connectionBroken)
    }

    @Test func stpctlFailures() {
        #expect(ExitStatus.forRun(StpctlFailure.usage("no socket"), of: Demo.self) == .usage)
        #expect(ExitStatus.forRun(StpctlFailure.timeout(seconds: 1, socket: "/s"), of: Demo.self) == .timeout)
        #expect(ExitStatus.forRun(StpctlFailure.noSessionMatched("no"), of: Demo.self) == .noSessionMatched)
    }

    @Test func argumentParserErrorsThrownWhileRunning() {
        #expect(ExitStatus.forRun(ValidationError("bad"), of: Demo.self) == .usage)
        #expect(ExitStatus.forRun(CleanExit.helpRequest(Demo.self), of: Demo.self) == .success)
        #expect(ExitStatus.forRun(ExitCode(4), of: Demo.self) == .timeout)
    }

    @Test func anythingElseIsABrokenConnection() {
        struct Unforeseen: Error {}
        #expect(ExitStatus.forRun(Unforeseen(), of: Demo.self) == .connectionBroken)
        #expect(ExitStatus.forRun(CancellationError(), of: Demo.self) == .connectionBroken)
    }

    @Test func messagesNameWhatToFix() {
        let cannotConnect = RPCClientError.cannotConnect(path: "/nonexistent", reason: "No such file or directory")
        #expect(String(describing: cannotConnect).contains("/nonexistent"))
        #expect(
            StpctlFailure.timeout(seconds: 0.5, socket: "/s.sock").description
                == "no reply from stpd at /s.sock within 0.5 s (--timeout)")
    }
}

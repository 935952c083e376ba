import Foundation
import Testing

/// The built `stpctl` next to the test bundle (`swift build --build-tests` builds both); the
/// Python end-to-end suite covers it against a live daemon.
let stpctlBinary: URL? = {
    let url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
        "stpctl")
    return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
}()

/// Runs the built stpctl and collects what it printed, on a thread of its own: `waitUntilExit`
/// blocks, and a blocked thread of Swift's small cooperative pool (two on a two-core machine)
/// stalls every other test of the process; under load that ran other tests past their timeouts.
func runStpctl(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try runStpctlBlocking(arguments) }) }
    }
}

private func runStpctlBlocking(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = stpctlBinary
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

@Suite(.enabled(if: stpctlBinary != nil, "stpctl is not built next to the tests"))
struct BinaryTests {
    func run(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await runStpctl(arguments)
    }

    @Test func cannotConnectExitsThreeNamingThePath() async throws {
        let result = try await run("--socket", "/nonexistent/stpd.sock", "ping")
        #expect(result.status == 3)
        #expect(result.stderr.contains("/nonexistent/stpd.sock"))
    }

    @Test func anUnknownSubcommandExitsTwo() async throws {
        let result = try await run("bogus-subcommand")
        #expect(result.status == 2)
        #expect(result.stderr.contains("bogus-subcommand"))
    }

    @Test func malformedCallParamsExitTwo() async throws {
        #expect(try await run("--socket", "/nonexistent", "call", "daemon.ping", "a={bad").status == 2)
    }

    @Test func helpExitsZeroAndListsTheExitStatuses() async throws {
        let result = try await run("--help")
        #expect(result.status == 0)
        #expect(result.stdout.contains("6  the connection broke"))
        #expect(result.stdout.contains("--generate-completion-script"))
    }

    @Test func completionScriptsAreGenerated() async throws {
        for shell in ["bash", "zsh", "fish"] {
            let result = try await run("--generate-completion-script", shell)
            #expect(result.status == 0)
            #expect(result.stdout.contains("daemon.status"), "\(shell) completes method names")
        }
    }
}

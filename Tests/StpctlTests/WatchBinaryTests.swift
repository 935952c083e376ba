import Foundation
import Testing

/// `watch` and `events wait` as a shell sees them, without a daemon (Tests/e2e/test_watch.py runs
/// them against one).
@Suite(.enabled(if: stpctlBinary != nil, "stpctl is not built next to the tests"))
struct WatchBinaryTests {
    func run(_ arguments: String...) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await runStpctl(arguments)
    }

    @Test func aFirstConnectionThatFailsExitsThreeAtOnce() async throws {
        let result = try await run("--socket", "/nonexistent/stpd.sock", "watch")
        #expect(result.status == 3)
        #expect(result.stderr.contains("/nonexistent/stpd.sock"))
    }

    @Test func monitorIsAnAlias() async throws {
        #expect(try await run("--socket", "/nonexistent/stpd.sock", "monitor", "--no-reconnect").status == 3)
    }

    @Test func badOptionsAreUsageErrors() async throws {
        #expect(try await run("--socket", "/nonexistent", "watch", "--since", "-1").status == 2)
        #expect(try await run("--socket", "/nonexistent", "watch", "--type", "").status == 2)
        #expect(try await run("--socket", "/nonexistent", "events", "wait").status == 2)
        #expect(
            try await run("--socket", "/nonexistent", "events", "wait", "--since", "0", "--timeout-seconds", "301")
                .status
                == 2)
        #expect(try await run("--socket", "/nonexistent", "events", "wait", "--since", "0", "--limit", "0").status == 2)
    }

    @Test func eventsWaitCannotConnectExitsThree() async throws {
        #expect(try await run("--socket", "/nonexistent/stpd.sock", "events", "wait", "--since", "0").status == 3)
    }
}

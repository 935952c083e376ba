import Foundation
import Testing

/// `watch` and `events wait` as a shell sees them, without a daemon (Tests/e2e/test_watch.py runs
/// them against one).
@Suite(.enabled(if: stpctlBinary != nil, "stpctl is not built next to the tests"))
struct WatchBinaryTests {
    func run(_ arguments: String...) throws -> (status: Int32, stdout: String, stderr: String) {
        try runStpctl(arguments)
    }

    @Test func aFirstConnectionThatFailsExitsThreeAtOnce() throws {
        let result = try run("--socket", "/nonexistent/stpd.sock", "watch")
        #expect(result.status == 3)
        #expect(result.stderr.contains("/nonexistent/stpd.sock"))
    }

    @Test func monitorIsAnAlias() throws {
        #expect(try run("--socket", "/nonexistent/stpd.sock", "monitor", "--no-reconnect").status == 3)
    }

    @Test func badOptionsAreUsageErrors() throws {
        #expect(try run("--socket", "/nonexistent", "watch", "--since", "-1").status == 2)
        #expect(try run("--socket", "/nonexistent", "watch", "--type", "").status == 2)
        #expect(try run("--socket", "/nonexistent", "events", "wait").status == 2)
        #expect(
            try run("--socket", "/nonexistent", "events", "wait", "--since", "0", "--timeout-seconds", "301").status
                == 2)
        #expect(try run("--socket", "/nonexistent", "events", "wait", "--since", "0", "--limit", "0").status == 2)
    }

    @Test func eventsWaitCannotConnectExitsThree() throws {
        #expect(try run("--socket", "/nonexistent/stpd.sock", "events", "wait", "--since", "0").status == 3)
    }
}

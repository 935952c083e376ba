import Foundation
import Testing

/// `stpctl customer` refusing bad arguments itself (status 2) before connecting anywhere.
@Suite(.enabled(if: stpctlBinary != nil, "stpctl is not built next to the tests"))
struct CustomerBinaryTests {
    @Test(arguments: [
        ["customer", "open"],
        ["customer", "open", "--app", "--backend", "http://127.0.0.1:1/api"],
        ["customer", "open", "--app", "--authorization", "Bearer x"],
        ["customer", "select", "cses_1"],
        ["customer", "select", "cses_1", "pm_1", "--none"],
        ["customer", "show"],
    ])
    func usageErrorsExitTwo(arguments: [String]) async throws {
        let result = try await runStpctl(["--socket", "/nonexistent/stpd.sock"] + arguments)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("Usage: stpctl customer"))
    }

    @Test func anUnreadableAuthorizationFileExitsTwo() async throws {
        let result = try await runStpctl([
            "--socket", "/nonexistent/stpd.sock", "customer", "open", "--backend", "http://127.0.0.1:1/api",
            "--authorization-file", "/nonexistent/token",
        ])
        #expect(result.status == 2)
        #expect(result.stderr.contains("/nonexistent/token"))
    }

    @Test func openHelpWarnsAboutTheProcessList() async throws {
        let result = try await runStpctl(["customer", "open", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("process list"))
        #expect(result.stdout.contains("STPD_AUTHORIZATION"))
    }
}

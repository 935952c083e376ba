import Foundation
import StpctlKit
import Testing

@Suite struct TimeoutTests {
    struct Expired: Error {}
    struct Failed: Error {}

    @Test func aQuickResultIsReturned() async throws {
        let value = try await withTimeout(seconds: 5, onTimeout: { Expired() }) { 42 }
        #expect(value == 42)
    }

    @Test func errorsPassThrough() async {
        await #expect(throws: Failed.self) {
            try await withTimeout(seconds: 5, onTimeout: { Expired() }) { () async throws -> Int in throw Failed() }
        }
    }

    @Test func aSlowOperationTimesOut() async {
        let start = ContinuousClock.now
        await #expect(throws: Expired.self) {
            try await withTimeout(seconds: 0.1, onTimeout: { Expired() }) {
                try await Task.sleep(for: .seconds(10))
            }
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    // Like a call whose reply never comes: cancellation does not stop it, the timeout still fires.
    @Test func anOperationIgnoringCancellationStillTimesOut() async {
        let start = ContinuousClock.now
        await #expect(throws: Expired.self) {
            try await withTimeout(seconds: 0.1, onTimeout: { Expired() }) {
                while ContinuousClock.now - start < .seconds(3) { try? await Task.sleep(for: .milliseconds(20)) }
            }
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func zeroWaitsForever() async throws {
        let value = try await withTimeout(seconds: 0, onTimeout: { Expired() }) {
            try await Task.sleep(for: .milliseconds(200))
            return "done"
        }
        #expect(value == "done")
    }
}

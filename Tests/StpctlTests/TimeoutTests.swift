import Foundation
import StpctlKit
import Synchronization
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
        await #expect(throws: Expired.self) {
            try await withTimeout(seconds: 0.1, onTimeout: { Expired() }) {
                try await Task.sleep(for: .seconds(3600))
            }
        }
    }

    // Like a call whose reply never comes: cancellation does not stop it, the timeout still fires.
    // The operation is released only after withTimeout returned, so waiting for it would hang
    // (and the time limit would fail the test): no wall-clock assertion needed.
    @Test(.timeLimit(.minutes(1))) func anOperationIgnoringCancellationStillTimesOut() async {
        let release = Release()
        await #expect(throws: Expired.self) {
            try await withTimeout(seconds: 0.1, onTimeout: { Expired() }) { await release.wait() }
        }
        release.open()
    }

    /// A latch that ignores cancellation.
    final class Release: Sendable {
        private let state = Mutex<(open: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func wait() async {
            await withCheckedContinuation { c in
                let now = state.withLock { s in
                    if s.open { return true }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }

        func open() {
            state.withLock { s in
                s.open = true
                defer { s.waiter = nil }
                return s.waiter
            }?.resume()
        }
    }

    @Test func zeroWaitsForever() async throws {
        let value = try await withTimeout(seconds: 0, onTimeout: { Expired() }) {
            try await Task.sleep(for: .milliseconds(200))
            return "done"
        }
        #expect(value == "done")
    }
}

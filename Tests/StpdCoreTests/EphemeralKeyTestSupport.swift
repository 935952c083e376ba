import Foundation
import JSONRPC
import StpdCore
import StripeAPI
import Synchronization

/// The manager's `now`, moved by the test.
final class NowBox: Sendable {
    private let value: Mutex<Date>

    init(_ start: Date = t0) { value = Mutex(start) }

    var now: Date { value.withLock { $0 } }
    func set(_ date: Date) { value.withLock { $0 = date } }
    func advance(seconds: TimeInterval) { value.withLock { $0 += seconds } }

    /// For `EphemeralKeyManager(now:)`.
    var clock: @Sendable () -> Date { { self.now } }
}

/// An `EphemeralKeyProvider` playing a script: call n takes step n, waits on its gate if it has
/// one (so a test can act while the fetch is in flight), then returns or throws its result.
/// Records each call's API version and whether the calling task was cancelled at the end.
final class ScriptedKeyProvider: EphemeralKeyProvider {
    struct Step: Sendable {
        var gate: Gate?
        var result: Result<JSONValue, any Error>

        static func key(_ json: JSONValue, gate: Gate? = nil) -> Step { Step(gate: gate, result: .success(json)) }
        static func error(_ error: any Error, gate: Gate? = nil) -> Step { Step(gate: gate, result: .failure(error)) }
    }

    private struct State {
        var steps: [Step]
        var apiVersions: [String] = []
        var sawCancellation = false
    }

    private let state: Mutex<State>

    init(_ steps: [Step]) { state = Mutex(State(steps: steps)) }

    var calls: Int { state.withLock { $0.apiVersions.count } }
    var apiVersions: [String] { state.withLock { $0.apiVersions } }
    var sawCancellation: Bool { state.withLock { $0.sawCancellation } }

    func createCustomerKey(apiVersion: String) async throws -> JSONValue {
        let step = state.withLock { s -> Step? in
            s.apiVersions.append(apiVersion)
            return s.steps.isEmpty ? nil : s.steps.removeFirst()
        }
        guard let step else { throw UnscriptedCall() }
        if let gate = step.gate { await gate.wait() }
        if Task.isCancelled { state.withLock { $0.sawCancellation = true } }
        return try step.result.get()
    }

    struct UnscriptedCall: Error {}
}

struct BackendDown: Error, Equatable {}

/// Stripe's ephemeral key JSON, as the backend returns it. `expires` is seconds after t0.
func ephemeralKeyJSON(
    _ n: Int = 1, expiresIn: TimeInterval = 3600, customer: String? = "cus_123",
    associated: JSONValue? = nil
) -> JSONValue {
    let associatedObjects: JSONValue =
        associated ?? .array(customer.map { [["type": "customer", "id": .string($0)]] } ?? [])
    return [
        "id": .string("ephkey_\(n)"),
        "object": "ephemeral_key",
        "created": .int(Int64(t0.timeIntervalSince1970)),
        "expires": .int(Int64(t0.timeIntervalSince1970 + expiresIn)),
        "livemode": false,
        "secret": .string("ek_test_secret\(n)abcdefghijklmnopqrstuvwxyz"),
        "associated_objects": associatedObjects,
    ]
}

/// Yields until `condition` holds: how a test learns that concurrently started callers have
/// reached the point it waits for (no sleeping; the suite's time limit catches a hang).
func until(_ condition: () -> Bool) async {
    while !condition() { await Task.yield() }
}

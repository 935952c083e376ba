import Logging
import StpdCore
import StripeAPI
import Testing

@testable import StpdDaemon

/// STPSourcePoller retries only "offline" (-1009) and "connection lost" (-1005), without backoff;
/// any other transport error ends the poll with it. A 429 is retried inside the request first.
@Suite struct PollFaultTests {
    /// A machine without its network cannot resolve Stripe's name: the SDK's -1009, which the
    /// poller retries, not an error that ends the poll. A real name under `.invalid`, which never
    /// resolves, through the daemon's own client and transport.
    @Test func aNameThatDoesNotResolveIsRetriedByThePoller() async throws {
        var configuration = DaemonConfiguration(stateDirectory: "/nonexistent")
        configuration.stripeAPIBase = "https://stpd-poll-test.invalid"
        configuration.stripeKey = StripeKey("pk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq")
        let stripe = StripeSetup(configuration: configuration, logger: Logger(label: "test"))
        let result = await StripePaymentsAPI(stripe: stripe).pollSource(
            id: "src_1", clientSecret: "src_client_secret_1")
        try await stripe.shutdown()
        guard case .connectivity(let error) = result else {
            Issue.record("expected a retried offline fault, got \(result)")
            return
        }
        #expect(error.fault == .offline)
    }

    /// The SDK's request retries a 429 three times (1, 4, 9 s) before the poller sees it; nothing
    /// else is retried inside a poll's request.
    @Test func aPollsRequestRetriesOnlyARateLimit() {
        let policy = StripePaymentsAPI.pollRetryPolicy(RetryPolicy())
        let decide = { (retries: Int, outcome: RetryPolicy.Outcome) in
            policy.decide(retriesSoFar: retries, outcome: outcome, unitRandom: 0)
        }
        #expect(decide(0, .response(status: 429, headers: [:])) == .retry(after: .seconds(1)))
        #expect(
            decide(2, .response(status: 429, headers: ["Stripe-Should-Retry": "true"])) == .retry(after: .seconds(9)))
        #expect(decide(3, .response(status: 429, headers: [:])) == .giveUp)
        #expect(decide(0, .response(status: 500, headers: [:])) == .giveUp)
        #expect(decide(0, .response(status: 503, headers: ["Stripe-Should-Retry": "true"])) == .giveUp)
        #expect(decide(0, .connectionFault) == .giveUp)
    }

    @Test(arguments: [TransportFault.offline, .connectionLost])
    func thePollerRetriesOnlyOfflineAndConnectionLost(fault: TransportFault) {
        let error = StripeError(kind: .connection, message: "no response", fault: fault)
        guard case .connectivity = StripePaymentsAPI.pollResult(of: error) else {
            Issue.record("\(fault) should be retried")
            return
        }
    }

    @Test func aTimeoutRefusalOrTLSFailureEndsThePollWithItsError() {
        for error in [
            StripeError(kind: .connection, message: "timed out", fault: .other),
            StripeError(kind: .connection, message: "stpd is shutting down"),
        ] {
            guard case .transportFailure(let carried) = StripePaymentsAPI.pollResult(of: error) else {
                Issue.record("\(error.message) should end the poll")
                continue
            }
            #expect(carried == error)
        }
    }
}

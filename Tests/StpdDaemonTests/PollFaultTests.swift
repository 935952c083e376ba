import StpdCore
import StripeAPI
import Testing

@testable import StpdDaemon

/// STPSourcePoller retries only "offline" (-1009) and "connection lost" (-1005), without backoff;
/// any other transport error ends the poll with it.
@Suite struct PollFaultTests {
    @Test(arguments: [TransportFault.offline, .connectionLost])
    func thePollerRetriesOnlyOfflineAndConnectionLost(fault: TransportFault) {
        let error = StripeError(kind: .connection, message: "no response", fault: fault)
        guard case .connectivity = StripePaymentsAPI.pollResult(of: error) else {
            Issue.record("\(fault) should be retried")
            return
        }
    }

    @Test func aTimeoutDNSOrTLSFailureEndsThePollWithItsError() {
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

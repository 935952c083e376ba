import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import StripeAPI
import TestSupport
import Testing

@testable import StripeHTTP

/// What a machine that lost its network sees, as the SDK's poller sorts it: URLSession reports a
/// name that does not resolve, and a connect nobody answers, as -1009 (offline), which it retries.
/// Real faults first (a name under `.invalid`, which never resolves; a port that never answers),
/// then the errors NIO and AsyncHTTPClient raise for them and their neighbours.
@Suite struct OfflineFaultTests {
    private func failure(_ url: String, connectTimeout: Duration = .seconds(10)) async throws
        -> StripeHTTPTransportError?
    {
        let transport = AsyncHTTPTransport(connectTimeout: connectTimeout)
        let request = HTTPRequestData(method: "GET", url: url, headers: [:], body: nil, timeout: .seconds(10))
        let error: StripeHTTPTransportError?
        do {
            _ = try await transport.send(request)
            error = nil
        } catch let caught as StripeHTTPTransportError {
            error = caught
        }
        try await transport.shutdown()
        return error
    }

    @Test func aNameThatDoesNotResolveIsOffline() async throws {
        let error = try #require(try await failure("https://stpd-poll-test.invalid/v1/sources/src_1"))
        #expect(error.kind == .connection)
        #expect(error.fault == .offline)
    }

    @Test func aConnectNobodyAnswersIsOffline() async throws {
        let blackhole = try BlackholePort()
        let error = try #require(try await failure(blackhole.baseURL + "/v1/x", connectTimeout: .milliseconds(300)))
        #expect(error.kind == .connection)
        #expect(error.fault == .offline)
    }

    @Test func theirErrorsAreOffline() {
        let url = "https://api.stripe.com"
        for error: any Error in [
            HTTPClientError.connectTimeout, ChannelError.connectTimeout(.seconds(10)),
            IOError(errnoCode: EHOSTUNREACH, reason: "connect"), IOError(errnoCode: ENETDOWN, reason: "connect"),
        ] {
            #expect(AsyncHTTPTransport.classify(error, url: url).fault == .offline, "\(error)")
        }
        // Connected, then no answer: a timeout, as URLSession's -1001, which ends the poll.
        #expect(AsyncHTTPTransport.classify(HTTPClientError.deadlineExceeded, url: url).fault == .other)
        #expect(AsyncHTTPTransport.classify(HTTPClientError.deadlineExceeded, url: url).kind == .timeout)
    }
}

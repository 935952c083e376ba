import Foundation
import JSONRPC
import NIOCore
import StripeAPI
import Synchronization
import TestSupport
import Testing

@testable import StripeHTTP

/// Runs `body` with a fresh transport and server, shutting both down after.
private func withServer(
    maxResponseBodySize: Int = AsyncHTTPTransport.defaultMaxResponseBodySize,
    _ script: @escaping @Sendable (Int, TestHTTPServer.Received) -> TestHTTPServer.Action,
    _ body: (AsyncHTTPTransport, TestHTTPServer) async throws -> Void
) async throws {
    let server = try await TestHTTPServer.start(script)
    let transport = AsyncHTTPTransport(maxResponseBodySize: maxResponseBodySize)
    do {
        try await body(transport, server)
    } catch {
        try? await transport.shutdown()
        await server.shutdown()
        throw error
    }
    try await transport.shutdown()
    await server.shutdown()
}

private func request(
    _ url: String, method: String = "GET", headers: StripeAPI.HTTPHeaders = [:], body: Data? = nil,
    timeout: Duration = .seconds(60)
) -> HTTPRequestData {
    HTTPRequestData(method: method, url: url, headers: headers, body: body, timeout: timeout)
}

/// The transport's error, or nil when it returned a response.
private func transportError(_ operation: () async throws -> HTTPResponseData) async -> StripeHTTPTransportError? {
    do {
        _ = try await operation()
        return nil
    } catch let error as StripeHTTPTransportError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

@Test func postArrivesIntact() async throws {
    try await withServer({ _, _ in
        .respond(
            status: 200, headers: [("Request-Id", "req_abc"), ("Content-Type", "application/json")],
            body: #"{"id":"src_1"}"#)
    }) { transport, server in
        let body = Data("amount=1099&owner[name]=Jenny%20Rosen&type=card".utf8)
        let response = try await transport.send(
            request(
                server.baseURL + "/v1/sources?expand[0]=customer", method: "POST",
                headers: [
                    "Authorization": "Bearer pk_test_123", "Stripe-Version": "2020-08-27",
                    "Content-Type": "application/x-www-form-urlencoded",
                    // Wrong on purpose: the transport must send its own, once.
                    "Content-Length": "999", "Idempotency-Key": "idem-1", "X-Stripe-User-Agent": #"{"lang":"swift"}"#,
                ], body: body))
        #expect(response.status == 200)
        #expect(response.headers["request-id"] == "req_abc")
        #expect(response.body == Data(#"{"id":"src_1"}"#.utf8))

        let received = try #require(server.received.first)
        #expect(server.received.count == 1)
        #expect(received.method == "POST")
        // Foundation's URL parsing (inside AsyncHTTPClient) escapes the brackets FormEncoder leaves
        // literal in a query; the same form data for any server, Stripe included.
        #expect(received.uri == "/v1/sources?expand%5B0%5D=customer")
        #expect(received.uri.removingPercentEncoding == "/v1/sources?expand[0]=customer")
        #expect(received.body == body)
        #expect(received.values("Content-Length") == [String(body.count)])
        #expect(received.values("Authorization") == ["Bearer pk_test_123"])
        #expect(received.values("Stripe-Version") == ["2020-08-27"])
        #expect(received.values("Content-Type") == ["application/x-www-form-urlencoded"])
        #expect(received.values("Idempotency-Key") == ["idem-1"])
        #expect(received.values("X-Stripe-User-Agent") == [#"{"lang":"swift"}"#])
    }
}

@Test func getAndDeleteCarryQueryAndNoBody() async throws {
    try await withServer({ _, _ in .respond(status: 200, body: "{}", chunked: true) }) { transport, server in
        let get = try await transport.send(
            request(
                server.baseURL + "/v1/payment_methods?customer=cus_1&type=card",
                headers: ["Authorization": "Bearer ek_test_1"]))
        #expect(get.status == 200)
        #expect(get.body == Data("{}".utf8))
        let delete = try await transport.send(
            request(server.baseURL + "/v1/customers/cus_1/sources/src_1", method: "DELETE"))
        #expect(delete.status == 200)

        let received = server.received
        #expect(received.map(\.method) == ["GET", "DELETE"])
        #expect(
            received.map(\.uri) == [
                "/v1/payment_methods?customer=cus_1&type=card", "/v1/customers/cus_1/sources/src_1",
            ])
        #expect(received.allSatisfy { $0.body.isEmpty })
        #expect(received[0].values("Authorization") == ["Bearer ek_test_1"])
    }
}

@Test func errorStatusesAreResponses() async throws {
    try await withServer({ index, _ in
        index == 0
            ? .respond(status: 500, body: #"{"error":{"type":"api_error"}}"#)
            : .respond(
                status: 429, headers: [("Retry-After", "1"), ("Stripe-Should-Retry", "true")], body: "slow down")
    }) { transport, server in
        let first = try await transport.send(request(server.baseURL + "/v1/x"))
        #expect(first.status == 500)
        #expect(first.body == Data(#"{"error":{"type":"api_error"}}"#.utf8))
        let second = try await transport.send(request(server.baseURL + "/v1/x"))
        #expect(second.status == 429)
        #expect(second.headers["retry-after"] == "1")
        #expect(second.headers["Stripe-Should-Retry"] == "true")
        #expect(second.body == Data("slow down".utf8))
    }
}

@Test func redirectsAreNotFollowed() async throws {
    try await withServer({ _, _ in .respond(status: 302, headers: [("Location", "/elsewhere")]) }) {
        transport, server in
        let response = try await transport.send(request(server.baseURL + "/v1/x"))
        #expect(response.status == 302)
        #expect(response.headers["Location"] == "/elsewhere")
        #expect(server.received.count == 1)
    }
}

@Test func closedWithoutAnswerIsConnectionFault() async throws {
    try await withServer({ _, _ in .close }) { transport, server in
        let error = await transportError { try await transport.send(request(server.baseURL + "/v1/x")) }
        #expect(error?.kind == .connection)
        #expect(server.received.count == 1)
    }
}

@Test func refusedIsConnectionFault() async throws {
    let server = try await TestHTTPServer.start { _, _ in .hang }
    let url = server.baseURL + "/v1/x"
    await server.shutdown()
    let transport = AsyncHTTPTransport()
    let error = await transportError { try await transport.send(request(url)) }
    #expect(error?.kind == .connection)
    try await transport.shutdown()
}

@Test func noAnswerTimesOutWithinTheTimeout() async throws {
    try await withServer({ _, _ in .hang }) { transport, server in
        let clock = ContinuousClock()
        let start = clock.now
        let error = await transportError {
            try await transport.send(request(server.baseURL + "/v1/x", timeout: .milliseconds(300)))
        }
        let elapsed = clock.now - start
        #expect(error?.kind == .timeout)
        // Never sooner than asked; how much later depends on the machine's load, so it is not asserted.
        #expect(elapsed >= .milliseconds(250))
    }
}

@Test func bodyOverTheLimitIsAnError() async throws {
    let big = String(repeating: "x", count: 100)
    try await withServer(
        maxResponseBodySize: 64,
        { index, _ in
            switch index {
            case 0: .respond(status: 200, body: big)
            case 1: .respond(status: 200, body: big, chunked: true)
            default: .respond(status: 200, body: String(big.prefix(64)), chunked: true)
            }
        }
    ) { transport, server in
        let declared = await transportError { try await transport.send(request(server.baseURL + "/a")) }
        #expect(declared?.kind == .responseTooLarge)
        let streamed = await transportError { try await transport.send(request(server.baseURL + "/b")) }
        #expect(streamed?.kind == .responseTooLarge)
        let atLimit = try await transport.send(request(server.baseURL + "/c"))
        #expect(atLimit.body.count == 64)
    }
}

@Test func shutdownIsIdempotent() async throws {
    let transport = AsyncHTTPTransport()
    try await transport.shutdown()
    try await transport.shutdown()
}

// MARK: - StripeClient over the real transport

private func stripeClient(_ server: TestHTTPServer, _ transport: AsyncHTTPTransport, timeout: Duration = .seconds(60))
    -> StripeClient
{
    StripeClient(
        configuration: StripeConfiguration(
            key: StripeKey("pk_test_51HxYzAbCdEfGhIjKlMn1234")!, baseURL: server.baseURL,
            userAgent: StripeUserAgent(bindingsVersion: "0.0.0"), timeout: timeout),
        transport: transport,
        sleep: { _ in })
}

@Test func serverErrorThenSuccessReusesIdempotencyKey() async throws {
    try await withServer({ index, _ in
        index == 0
            ? .respond(status: 500, body: #"{"error":{"type":"api_error","message":"boom"}}"#)
            : .respond(status: 200, headers: [("Request-Id", "req_2")], body: #"{"id":"src_1","object":"source"}"#)
    }) { transport, server in
        let value = try await stripeClient(server, transport).send(
            StripeRequest(.post, "/v1/sources", params: ["type": "card", "amount": 1099]))
        #expect(value["id"] == "src_1")

        let received = server.received
        #expect(received.count == 2)
        let keys = received.map { $0.values("Idempotency-Key") }
        #expect(keys[0].count == 1)
        #expect(!(keys[0].first ?? "").isEmpty)
        #expect(keys[0] == keys[1])
        #expect(received.allSatisfy { $0.body == Data("amount=1099&type=card".utf8) })
        #expect(received.allSatisfy { $0.uri == "/v1/sources" && $0.method == "POST" })
        #expect(received[0].values("Authorization") == ["Bearer pk_test_51HxYzAbCdEfGhIjKlMn1234"])
    }
}

@Test func timeoutsAreRetriedThenReportedAsConnectionErrors() async throws {
    try await withServer({ _, _ in .hang }) { transport, server in
        do {
            _ = try await stripeClient(server, transport, timeout: .milliseconds(300))
                .send(StripeRequest(.get, "/v1/sources/src_1", params: ["client_secret": "src_client_secret_abc"]))
            Issue.record("no error")
        } catch let error as StripeError {
            #expect(error.kind == .connection)
            #expect(error.message.contains("3 attempt(s)"))
            #expect(!error.message.contains("src_client_secret_abc"))
        }
        #expect(server.received.count == 3)
    }
}

@Test func typedModelEndToEnd() async throws {
    try await withServer({ _, _ in
        .respond(
            status: 200,
            body:
                #"{"id":"pm_1","object":"payment_method","type":"card","card":{"brand":"visa","last4":"4242","wallet":null}}"#
        )
    }) { transport, server in
        let pm = try await stripeClient(server, transport).send(
            StripeRequest(.get, "/v1/payment_methods/pm_1"), as: PaymentMethod.self)
        #expect(pm.label == "Visa 4242")
        #expect(pm.card?.wallet == nil)
    }
}

@Test func refusedFailsFastAndIsRetriedByTheClient() async throws {
    let server = try await TestHTTPServer.start { _, _ in .hang }
    await server.shutdown()
    let transport = AsyncHTTPTransport()
    let clock = ContinuousClock()
    let start = clock.now
    do {
        _ = try await stripeClient(server, transport, timeout: .seconds(60)).send(StripeRequest(.get, "/v1/x"))
        Issue.record("no error")
    } catch let error as StripeError {
        #expect(error.kind == .connection)
        #expect(error.message.contains("3 attempt(s)"))
    }
    // The attempts fail at the refused connect (AsyncHTTPClient may retry a connect for a moment),
    // not at their 60 s timeout: all three end well within one timeout. A loose bound on purpose.
    #expect(clock.now - start < .seconds(60))
    try await transport.shutdown()
}

/// The SDK's poller (the Swift one, 21.0 to the newest) retries only URLSession's -1005
/// (connection lost) and -1009 (offline): the transport says which fault an attempt had, and
/// `StripeClient` carries it in the error. What else stpd counts as offline: `OfflineFaultTests`.
@Test func aConnectionClosedBeforeTheAnswerIsStripeIOS21OnConnectionLost() async throws {
    try await withServer({ _, _ in .close }) { transport, server in
        let error = await transportError { try await transport.send(request(server.baseURL + "/v1/x")) }
        #expect(error?.fault == .connectionLost)
    }
}

@Test func aRefusedConnectAndALateAnswerAreNotStripeIOS21OnRetriedFaults() async throws {
    try await withServer({ _, _ in .hang }) { transport, server in
        let error = await transportError {
            try await transport.send(request(server.baseURL + "/v1/x", timeout: .milliseconds(200)))
        }
        #expect(error?.kind == .timeout)
        #expect(error?.fault == .other)
    }
    let server = try await TestHTTPServer.start { _, _ in .hang }
    let url = server.baseURL + "/v1/x"
    await server.shutdown()
    let transport = AsyncHTTPTransport()
    let refused = await transportError { try await transport.send(request(url)) }
    try await transport.shutdown()
    #expect(refused?.kind == .connection)
    #expect(refused?.fault == .other)
}

@Test func anUnreachableNetworkIsStripeIOS21OnOffline() {
    let unreachable = IOError(errnoCode: ENETUNREACH, reason: "connect")
    #expect(AsyncHTTPTransport.classify(unreachable, url: "https://api.stripe.com").fault == .offline)
    let reset = IOError(errnoCode: ECONNRESET, reason: "read")
    #expect(AsyncHTTPTransport.classify(reset, url: "https://api.stripe.com").fault == .connectionLost)
    let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
    #expect(AsyncHTTPTransport.classify(refused, url: "https://api.stripe.com").fault == .other)
}

@Test func theClientCarriesTheFaultOfItsLastAttempt() async throws {
    try await withServer({ _, _ in .close }) { transport, server in
        var client = stripeClient(server, transport)
        client.retryPolicy.maxTransientRetries = 0
        do {
            _ = try await client.send(StripeRequest(.get, "/v1/x"))
            Issue.record("no error")
        } catch let error as StripeError {
            #expect(error.kind == .connection)
            #expect(error.fault == .connectionLost)
        }
    }
}

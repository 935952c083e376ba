import Foundation
import JSONRPC
import StripeAPI
import StripeHTTP
import Synchronization
import Testing

@testable import StripeTestServer

// The real StripeClient over the real AsyncHTTPTransport against the in-process test server:
// retries of one logical POST carry one Idempotency-Key and produce one object, whatever fault
// (5xx, lost response, 429) the server injects; 4xx errors are never retried. The policy's
// randomness and sleeper are injected, so no test waits a backoff.

/// Every delay the client asked its sleeper for, in order.
private final class RecordedSleeps: Sendable {
    let delays = Mutex<[Duration]>([])
    var all: [Duration] { delays.withLock { $0 } }
}

/// A client on a fresh AsyncHTTPTransport (the caller shuts it down), secret key, fixed jitter.
private func makeClient(
    _ server: RunningStripeTestServer, sleeps: RecordedSleeps, unitRandom: Double = 0
) -> (StripeClient, AsyncHTTPTransport) {
    let transport = AsyncHTTPTransport()
    let key = StripeKey(server.state.configuration.secretKey)!
    let configuration = StripeConfiguration(
        key: key, baseURL: server.baseURL, userAgent: StripeUserAgent(bindingsVersion: "test"), timeout: .seconds(10))
    let client = StripeClient(
        configuration: configuration, transport: transport,
        sleep: { delay in sleeps.delays.withLock { $0.append(delay) } },
        random: { unitRandom })
    return (client, transport)
}

/// Runs `body` with a client and always shuts its transport down, even when `body` throws.
private func withClient<T: Sendable>(
    _ server: RunningStripeTestServer, sleeps: RecordedSleeps, unitRandom: Double = 0,
    _ body: (StripeClient) async throws -> T
) async throws -> T {
    let (client, transport) = makeClient(server, sleeps: sleeps, unitRandom: unitRandom)
    do {
        let result = try await body(client)
        try await transport.shutdown()
        return result
    } catch {
        try? await transport.shutdown()
        throw error
    }
}

/// How many customers the server holds (deleted ones included: none are deleted here).
private func customerCount(_ state: StripeTestState) -> Int { state.withLock { state.customers.count } }

private func customerPOSTs(_ state: StripeTestState) -> [LoggedRequest] {
    state.requests.filter { $0.method == "POST" && $0.path == "/v1/customers" }
}

@Suite struct ClientRetryTests {
    /// (1) 500 on the first two attempts: the third succeeds, all three carry one key, one customer.
    @Test func serverErrorsThenSuccessMakeOneCustomer() async throws {
        try await withStripeTestServer { server in
            server.state.addFault(Fault(method: "POST", path: "/v1/customers", status: 500, times: 2))
            let sleeps = RecordedSleeps()
            let value = try await withClient(server, sleeps: sleeps) { client in
                try await client.send(StripeRequest(.post, "/v1/customers", params: ["email": "jenny@example.com"]))
            }
            let id = try #require(value["id"]?.stringValue)
            #expect(value["email"] == "jenny@example.com")

            let posts = customerPOSTs(server.state)
            #expect(posts.map(\.status) == [500, 500, 200])
            #expect(posts.map(\.fault) == ["status", "status", nil])
            #expect(posts.allSatisfy { $0.auth == .secret })
            let key = try #require(posts.first?.idempotencyKey)
            #expect(posts.allSatisfy { $0.idempotencyKey == key })
            #expect(server.state.requestCount(idempotencyKey: key) == 3)
            #expect(customerCount(server.state) == 1)
            #expect(server.state.object(id)?["email"] == "jenny@example.com")
            // 5xx backoff, stripe-python's: min(0.5 s · 2^(k-1), 2 s) × [0.5, 1), at least 0.5 s (jitter 0 here).
            #expect(sleeps.all == [.seconds(0.5), .seconds(0.5)])
        }
    }

    /// stripe-python's `_should_retry`: a 409 (`idempotency_key_in_use`, met by a retried POST while
    /// Stripe still processes the first attempt) is retried under the same key.
    @Test func aConflictIsRetriedUnderTheSameKey() async throws {
        try await withStripeTestServer { server in
            server.state.addFault(
                Fault(
                    method: "POST", path: "/v1/customers", status: 409,
                    body: [
                        "error": [
                            "type": "idempotency_error", "code": "idempotency_key_in_use",
                            "message": "There is currently another in-progress request using this Idempotent Key",
                        ]
                    ]))
            let value = try await withClient(server, sleeps: RecordedSleeps()) { client in
                try await client.send(StripeRequest(.post, "/v1/customers", params: ["email": "jenny@example.com"]))
            }
            #expect(value["email"] == "jenny@example.com")
            let posts = customerPOSTs(server.state)
            #expect(posts.map(\.status) == [409, 200])
            #expect(Set(posts.map(\.idempotencyKey)).count == 1)
            #expect(customerCount(server.state) == 1)
        }
    }

    /// (2) The first response is lost after the server created the customer: the retry, with the
    /// same key, gets the stored response replayed, and no second customer is made.
    @Test func droppedResponseIsReplayedNotRepeated() async throws {
        try await withStripeTestServer { server in
            server.state.addFault(Fault(method: "POST", path: "/v1/customers", drop: true, afterHandling: true))
            let sleeps = RecordedSleeps()
            let response = try await withClient(server, sleeps: sleeps) { client in
                try await client.response(for: StripeRequest(.post, "/v1/customers", params: ["name": "Jenny Rosen"]))
            }
            #expect(response.status == 200)
            #expect(response.headers["Idempotent-Replayed"] == "true")
            let value = try ResponseParser.parseJSON(response).get()
            let id = try #require(value["id"]?.stringValue)
            #expect(value["name"] == "Jenny Rosen")

            let posts = customerPOSTs(server.state)
            #expect(posts.count == 2)
            #expect(posts.map(\.fault) == ["drop", nil])
            #expect(posts.map(\.status) == [nil, 200])
            #expect(posts.map(\.replayed) == [false, true])
            let key = try #require(posts.first?.idempotencyKey)
            #expect(posts.allSatisfy { $0.idempotencyKey == key })
            #expect(response.headers["Idempotency-Key"] == key)
            #expect(customerCount(server.state) == 1)
            #expect(server.state.object(id) != nil)
            // A connection fault: the transient backoff, 0.5 s for the first retry.
            #expect(sleeps.all == [.seconds(0.5)])
        }
    }

    /// A connection dropped before handling: nothing was created, so the retry creates the one customer.
    @Test func droppedBeforeHandlingRetriesOnce() async throws {
        try await withStripeTestServer { server in
            server.state.addFault(Fault(method: "POST", path: "/v1/customers", drop: true))
            let sleeps = RecordedSleeps()
            let response = try await withClient(server, sleeps: sleeps) { client in
                try await client.response(for: StripeRequest(.post, "/v1/customers", params: ["name": "Jenny Rosen"]))
            }
            #expect(response.status == 200)
            #expect(response.headers["Idempotent-Replayed"] == nil)
            let posts = customerPOSTs(server.state)
            #expect(posts.map(\.fault) == ["drop", nil])
            #expect(posts.map(\.replayed) == [false, false])
            #expect(Set(posts.map(\.idempotencyKey)).count == 1)
            #expect(posts.first?.idempotencyKey != nil)
            #expect(customerCount(server.state) == 1)
            #expect(sleeps.all == [.seconds(0.5)])
        }
    }

    /// (3) 429 twice, then success. The policy waits k² s + jitter, lengthened to Retry-After when
    /// that is longer: Retry-After 3 beats 1 + 0.25 on the first retry; 4 + 0.25 beats Retry-After 1
    /// on the second.
    @Test func rateLimitHonoursRetryAfterAndBackoff() async throws {
        try await withStripeTestServer { server in
            server.state.addFault(
                Fault(method: "POST", path: "/v1/customers", status: 429, headers: ["Retry-After": "3"]))
            server.state.addFault(
                Fault(method: "POST", path: "/v1/customers", status: 429, headers: ["Retry-After": "1"]))
            let sleeps = RecordedSleeps()
            let value = try await withClient(server, sleeps: sleeps, unitRandom: 0.5) { client in
                try await client.send(StripeRequest(.post, "/v1/customers", params: ["email": "rate@example.com"]))
            }
            #expect(value["object"] == "customer")
            #expect(sleeps.all == [.seconds(3), .seconds(4.25)])

            let posts = customerPOSTs(server.state)
            #expect(posts.map(\.status) == [429, 429, 200])
            let key = try #require(posts.first?.idempotencyKey)
            #expect(posts.allSatisfy { $0.idempotencyKey == key })
            #expect(customerCount(server.state) == 1)
        }
    }

    /// Persistent 5xx: the client gives up after 1 + maxTransientRetries attempts, with Stripe's error.
    @Test func persistentServerErrorGivesUpAfterThreeAttempts() async throws {
        try await withStripeTestServer { server in
            server.state.addFault(Fault(method: "POST", path: "/v1/customers", status: 503, times: 10))
            let sleeps = RecordedSleeps()
            let error = await #expect(throws: StripeError.self) {
                try await withClient(server, sleeps: sleeps) { client in
                    try await client.send(StripeRequest(.post, "/v1/customers", params: ["email": "x@example.com"]))
                }
            }
            #expect(error?.kind == .api)
            #expect(error?.httpStatus == 503)
            let posts = customerPOSTs(server.state)
            #expect(posts.count == 3)
            #expect(Set(posts.map(\.idempotencyKey)).count == 1)
            #expect(customerCount(server.state) == 0)
            // stripe-python's backoff: min(0.5 s · 2^(k-1), 2 s) × [0.5, 1), at least 0.5 s (jitter 0 here).
            #expect(sleeps.all == [.seconds(0.5), .seconds(0.5)])
        }
    }

    /// (4) A declined card on attach is a 402 card error: final, never retried.
    @Test func cardErrorOnAttachIsNotRetried() async throws {
        try await withStripeTestServer { server in
            let sleeps = RecordedSleeps()
            let error = await #expect(throws: StripeError.self) {
                try await withClient(server, sleeps: sleeps) { client in
                    let customer = try await client.send(
                        StripeRequest(.post, "/v1/customers", params: ["email": "d@example.com"]))
                    let pm = try await client.send(
                        StripeRequest(
                            .post, "/v1/payment_methods",
                            params: [
                                "type": "card",
                                "card": [
                                    "number": "4000000000000002", "exp_month": "12", "exp_year": "2040", "cvc": "123",
                                ],
                            ]))
                    let customerID = try #require(customer["id"]?.stringValue)
                    let pmID = try #require(pm["id"]?.stringValue)
                    return try await client.send(
                        StripeRequest(
                            .post, "/v1/payment_methods/\(pmID)/attach", params: ["customer": .string(customerID)]))
                }
            }
            #expect(error?.kind == .card)
            #expect(error?.httpStatus == 402)
            #expect(error?.code == "card_declined")
            #expect(error?.cardErrorCode == .cardDeclined)
            #expect(error?.declineCode == "generic_decline")
            #expect(error?.requestID?.hasPrefix("req_") == true)

            let attaches = server.state.requests.filter { $0.path.hasSuffix("/attach") }
            #expect(attaches.count == 1)
            #expect(attaches.first?.status == 402)
            #expect(attaches.first?.idempotencyKey != nil)
            #expect(server.state.requests.count == 3)
            #expect(sleeps.all.isEmpty)
        }
    }

    /// (5) An unknown parameter is a 400 invalid_request_error naming it: final, never retried.
    @Test func unknownParameterIsInvalidRequestNotRetried() async throws {
        try await withStripeTestServer { server in
            let sleeps = RecordedSleeps()
            let error = await #expect(throws: StripeError.self) {
                try await withClient(server, sleeps: sleeps) { client in
                    try await client.send(StripeRequest(.post, "/v1/customers", params: ["favourite_colour": "teal"]))
                }
            }
            #expect(error?.kind == .invalidRequest)
            #expect(error?.httpStatus == 400)
            #expect(error?.param == "favourite_colour")
            #expect(error?.code == "parameter_unknown")
            #expect(error?.message.contains("favourite_colour") == true)

            let posts = customerPOSTs(server.state)
            #expect(posts.count == 1)
            #expect(posts.first?.status == 400)
            #expect(customerCount(server.state) == 0)
            #expect(sleeps.all.isEmpty)
        }
    }
}

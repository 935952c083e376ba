import Foundation
import JSONRPC
import StripeAPI
import Synchronization
import Testing

/// Answers each attempt from a script and records what was sent.
private final class ScriptedTransport: StripeHTTPTransport {
    enum Step {
        case respond(HTTPResponseData)
        case drop
    }
    struct Dropped: Error, CustomStringConvertible {
        var description: String {
            "connection reset fetching https://api.stripe.com/v1/x?client_secret=pi_1_secret_abc"
        }
    }
    private let state: Mutex<(steps: [Step], sent: [HTTPRequestData])>
    init(_ steps: [Step]) { state = Mutex((steps, [])) }
    var sent: [HTTPRequestData] { state.withLock { $0.sent } }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let step = state.withLock { s -> Step in
            s.sent.append(request)
            return s.steps.isEmpty ? .drop : s.steps.removeFirst()
        }
        switch step {
        case .respond(let r): return r
        case .drop: throw Dropped()
        }
    }
}

private final class Sleeps: Sendable {
    let delays = Mutex<[Duration]>([])
    var all: [Duration] { delays.withLock { $0 } }
}

private func client(_ transport: ScriptedTransport, sleeps: Sleeps = Sleeps()) -> StripeClient {
    let counter = Mutex(0)
    return StripeClient(
        configuration: testConfiguration(), transport: transport,
        sleep: { d in sleeps.delays.withLock { $0.append(d) } },
        random: { 0 },
        makeIdempotencyKey: {
            counter.withLock {
                $0 += 1
                return "idem-\($0)"
            }
        })
}

private let ok = response(200, #"{"id":"src_1","object":"source"}"#)
private let createSource = StripeRequest(.post, "/v1/sources", params: ["type": "card"])

@Test func rateLimitThenSuccess() async throws {
    let transport = ScriptedTransport([
        .respond(response(429, #"{"error":{"type":"invalid_request_error","code":"rate_limit"}}"#)), .respond(ok),
    ])
    let sleeps = Sleeps()
    let value = try await client(transport, sleeps: sleeps).send(createSource)
    #expect(value["id"] == "src_1")
    #expect(sleeps.all == [.seconds(1)])
    #expect(transport.sent.map { $0.headers["Idempotency-Key"] } == ["idem-1", "idem-1"])
}

@Test func serverErrorDropThenSuccessReusesIdempotencyKey() async throws {
    let transport = ScriptedTransport([
        .respond(response(500, #"{"error":{"type":"api_error"}}"#)), .drop, .respond(ok),
    ])
    let sleeps = Sleeps()
    let c = client(transport, sleeps: sleeps)
    _ = try await c.send(createSource)
    // stripe-python's backoff: min(0.5 s · 2^(k-1), 2 s) × [0.5, 1), at least 0.5 s (jitter 0 here).
    #expect(sleeps.all == [.seconds(0.5), .seconds(0.5)])
    #expect(transport.sent.count == 3)
    #expect(Set(transport.sent.map { $0.headers["Idempotency-Key"] }) == ["idem-1"])
    #expect(Set(transport.sent.map(\.body)) == [Data("type=card".utf8)])
    // The next logical POST through the same client gets a fresh key.
    _ = try? await c.response(for: createSource)
    #expect(transport.sent.last?.headers["Idempotency-Key"] == "idem-2")
}

@Test func callerFixedIdempotencyKeyIsKept() async throws {
    let transport = ScriptedTransport([.drop, .respond(ok)])
    var request = createSource
    request.idempotencyKey = "stpd-op-42"
    _ = try await client(transport).send(request)
    #expect(transport.sent.map { $0.headers["Idempotency-Key"] } == ["stpd-op-42", "stpd-op-42"])
}

@Test func cardDeclinedIsNotRetried() async throws {
    let body =
        #"{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline","message":"Your card was declined."}}"#
    let transport = ScriptedTransport([.respond(response(402, body, requestID: "req_9")), .respond(ok)])
    let sleeps = Sleeps()
    let error = await #expect(throws: StripeError.self) {
        try await client(transport, sleeps: sleeps).send(createSource)
    }
    #expect(error?.kind == .card)
    #expect(error?.declineCode == "generic_decline")
    #expect(error?.requestID == "req_9")
    #expect(transport.sent.count == 1)
    #expect(sleeps.all.isEmpty)
}

@Test func errorBodyWith200() async throws {
    let transport = ScriptedTransport([
        .respond(response(200, #"{"error":{"type":"invalid_request_error","message":"No such source","param":"id"}}"#))
    ])
    let error = await #expect(throws: StripeError.self) { try await client(transport).send(createSource) }
    #expect(error?.kind == .invalidRequest)
    #expect(error?.param == "id")
}

private struct Source: Decodable {
    var id: String
    var status: String
}

@Test func undecodable200() async throws {
    let transport = ScriptedTransport([.respond(ok)])
    let error = await #expect(throws: StripeError.self) {
        try await client(transport).send(createSource, as: Source.self)
    }
    #expect(error?.kind == .decoding)
    #expect(error?.rpcData["http_status"] == 200)
    #expect(error?.rpcData["request_id"] == "req_123")
}

@Test func typedSuccess() async throws {
    let transport = ScriptedTransport([.respond(response(200, #"{"id":"src_1","status":"pending","x":null}"#))])
    let source = try await client(transport).send(StripeRequest(.get, "/v1/sources/src_1"), as: Source.self)
    #expect(source.id == "src_1")
    #expect(transport.sent.first?.headers["Idempotency-Key"] == nil)
}

@Test func connectionFaultsExhaustedBecomeConnectionError() async throws {
    let transport = ScriptedTransport([])
    let sleeps = Sleeps()
    let error = await #expect(throws: StripeError.self) {
        try await client(transport, sleeps: sleeps).send(StripeRequest(.get, "/v1/x"))
    }
    #expect(error?.kind == .connection)
    #expect(transport.sent.count == 3)
    #expect(sleeps.all.count == 2)
    #expect(error?.message.contains("pi_1_secret_[REDACTED]") == true)
    #expect(error?.message.contains("secret_abc") == false)
}

@Test func rateLimitExhaustedReturnsTheLast429() async throws {
    let limited = response(429, #"{"error":{"type":"invalid_request_error","message":"Too many requests"}}"#)
    let transport = ScriptedTransport(Array(repeating: .respond(limited), count: 4) + [.respond(ok)])
    let sleeps = Sleeps()
    let error = await #expect(throws: StripeError.self) {
        try await client(transport, sleeps: sleeps).send(createSource)
    }
    #expect(error?.kind == .rateLimit)
    #expect(transport.sent.count == 4)
    #expect(sleeps.all == [.seconds(1), .seconds(4), .seconds(9)])
}

@Test func cancellationDuringBackoffStops() async throws {
    let transport = ScriptedTransport([.respond(response(500, "{}")), .respond(ok)])
    let c = StripeClient(
        configuration: testConfiguration(), transport: transport,
        sleep: { _ in throw CancellationError() })
    await #expect(throws: CancellationError.self) { try await c.send(createSource) }
    #expect(transport.sent.count == 1)
}

/// Every attempt reaches the observer, retries included, with what the log and metrics need and
/// no query (a GET's query may carry a client secret).
@Test func theObserverSeesEveryAttemptWithoutTheQuery() async throws {
    let transport = ScriptedTransport([
        .respond(response(500, #"{"error":{"type":"api_error"}}"#, requestID: "req_1")), .drop,
        .respond(response(200, #"{"id":"src_1AbC","object":"source"}"#, requestID: "req_3")),
    ])
    let seen = Mutex<[StripeAttempt]>([])
    var c = client(transport)
    c.observer = { attempt in seen.withLock { $0.append(attempt) } }
    _ = try await c.send(createSource)
    let attempts = seen.withLock { $0 }
    #expect(attempts.map(\.attempt) == [1, 2, 3])
    #expect(attempts.map(\.status) == [500, nil, 200])
    #expect(attempts.map(\.requestID) == ["req_1", nil, "req_3"])
    #expect(attempts.map(\.willRetry) == [true, true, false])
    #expect(attempts.map(\.failed) == [true, true, false])
    #expect(Set(attempts.map(\.idempotencyKey)) == ["idem-1"])
    #expect(Set(attempts.map(\.endpoint)) == ["POST /v1/sources"])
    // The transport's text quoted a client secret in a URL: redacted.
    let failure = try #require(attempts[1].failure)
    #expect(failure.contains("connection reset"))
    #expect(!failure.contains("secret_abc"))

    seen.withLock { $0.removeAll() }
    let get = StripeRequest(.get, "/v1/sources/src_1AbC?client_secret=src_client_secret_xyz")
    _ = try? await c.send(get)
    let retrieve = try #require(seen.withLock { $0.first })
    #expect(retrieve.path == "/v1/sources/src_1AbC")
    #expect(retrieve.endpoint == "GET /v1/sources/{id}")
    #expect(retrieve.idempotencyKey == nil)
}

@Test func endpointsNameResourcesAndHideIds() {
    func endpoint(_ method: String, _ path: String) -> String {
        StripeAttempt(
            method: method, path: path, status: 200, requestID: nil, latency: .zero, attempt: 1, idempotencyKey: nil,
            willRetry: false
        ).endpoint
    }
    #expect(endpoint("POST", "/v1/payment_intents/pi_3Nx9/confirm") == "POST /v1/payment_intents/{id}/confirm")
    #expect(endpoint("POST", "/v1/ephemeral_keys") == "POST /v1/ephemeral_keys")
    #expect(endpoint("GET", "/v1/customers/cus_1/sources") == "GET /v1/customers/{id}/sources")
    #expect(endpoint("DELETE", "/v1/customers/cus_Ab/sources/src_9") == "DELETE /v1/customers/{id}/sources/{id}")
}

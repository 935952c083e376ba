import Foundation
import JSONRPC

/// Sends `StripeRequest`s through a transport: builds headers, retries by the policy with one
/// Idempotency-Key per logical POST, and parses the final response. Clock, randomness and key
/// generation are injected so tests script every retry without sleeping.
public struct StripeClient: Sendable {
    public var configuration: StripeConfiguration
    public var retryPolicy: RetryPolicy
    let transport: any StripeHTTPTransport
    let sleep: @Sendable (Duration) async throws -> Void
    let random: @Sendable () -> Double
    let makeIdempotencyKey: @Sendable () -> String
    /// Told of every attempt once it is decided whether another follows (the daemon logs and
    /// counts them); called on the calling task, so it must not block.
    public var observer: (@Sendable (StripeAttempt) -> Void)?

    public init(
        configuration: StripeConfiguration, transport: any StripeHTTPTransport, retryPolicy: RetryPolicy = .init(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        makeIdempotencyKey: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() }
    ) {
        self.configuration = configuration
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.sleep = sleep
        self.random = random
        self.makeIdempotencyKey = makeIdempotencyKey
    }

    /// The body as JSON; a non-2xx status is always an error on this untyped route.
    public func send(_ request: StripeRequest) async throws -> JSONValue {
        try ResponseParser.parseJSON(await response(for: request)).get()
    }

    /// The body decoded tolerantly as `T` (nulls stripped; see `ResponseParser`).
    public func send<T: Decodable>(_ request: StripeRequest, as type: T.Type) async throws -> T {
        try ResponseParser.parse(await response(for: request), as: type).get()
    }

    /// The final HTTP response after retries. Throws `StripeError` of kind `.connection` when the last
    /// attempt got no response, and `CancellationError` when the calling task is cancelled.
    public func response(for request: StripeRequest) async throws -> HTTPResponseData {
        let idempotencyKey = request.method == .post ? request.idempotencyKey ?? makeIdempotencyKey() : nil
        let http = configuration.httpRequest(for: request, idempotencyKey: idempotencyKey)
        var retries = 0
        let clock = ContinuousClock()
        while true {
            try Task.checkCancellation()
            let outcome: RetryPolicy.Outcome
            var result: Result<HTTPResponseData, any Error>
            let start = clock.now
            do {
                let response = try await transport.send(http)
                result = .success(response)
                outcome = .response(status: response.status, headers: response.headers)
            } catch {
                if Task.isCancelled { throw CancellationError() }
                result = .failure(error)
                outcome = .connectionFault
            }
            let decision = retryPolicy.decide(retriesSoFar: retries, outcome: outcome, unitRandom: random())
            if let observer {
                let response = try? result.get()
                var willRetry = false
                if case .retry = decision { willRetry = true }
                var failure: String?
                if case .failure(let error) = result { failure = Redaction.redact(String(describing: error)) }
                observer(
                    StripeAttempt(
                        method: request.method.rawValue, path: StripeAttempt.withoutQuery(request.path),
                        status: response?.status,
                        requestID: response?.headers["Request-Id"], latency: start.duration(to: clock.now),
                        attempt: retries + 1, idempotencyKey: idempotencyKey, willRetry: willRetry,
                        failure: failure))
            }
            switch decision {
            case .retry(let delay):
                try await sleep(delay)
                retries += 1
            case .giveUp:
                return try result.mapError { error in
                    // The transport's text may quote the URL, whose query can hold a client secret.
                    StripeError(
                        kind: .connection,
                        message: "Could not connect to Stripe after \(retries + 1) attempt(s): "
                            + Redaction.redact(String(describing: error)),
                        fault: (error as? any TransportFaultReporting)?.fault ?? .other)
                }.get()
            }
        }
    }
}

extension StripeClient {
    /// A GET of `url` whose answer nobody reads (Alipay's return URL before an intent is re-read):
    /// no key, no retry, 10 s at most.
    public func ping(_ url: URL) async {
        _ = try? await transport.send(
            HTTPRequestData(method: "GET", url: url.absoluteString, headers: [:], body: nil, timeout: .seconds(10)))
    }
}

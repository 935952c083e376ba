import Foundation

/// When to try a Stripe call again. Pure: the caller passes the randomness, so every branch tests
/// exactly. Retrying a POST is safe because every attempt carries the same Idempotency-Key.
///
/// - 429: the SDK's schedule (spec §7.6): up to 3 retries, before retry k wait k² s + [0, 0.5) s.
/// - 5xx and connection faults (refused, reset, timeout): the SDK never retries these; stpd does, up
///   to 2 retries, waiting 0.5 s · 2^(k-1) + [0, 0.5) s. Few and short, because a JSON-RPC caller
///   is waiting and a persistent outage should surface rather than stall it.
/// - Any other status (2xx, 3xx, 4xx but 429): never.
/// - `k` counts every retry of the call, whatever caused the earlier ones, so a call makes at most
///   `1 + max(maxRateLimitRetries, maxTransientRetries)` attempts.
/// - `Stripe-Should-Retry: false` vetoes any retry (Stripe knows the request cannot succeed);
///   `true` does not make a 4xx retryable (only the rules above do).
/// - `Retry-After: <seconds>` lengthens the wait to at least that; above `maxRetryAfter` stpd gives
///   up instead of stalling the caller. The HTTP-date form is ignored.
public struct RetryPolicy: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        case response(status: Int, headers: HTTPHeaders)
        case connectionFault
    }

    public enum Decision: Sendable, Hashable {
        case retry(after: Duration)
        case giveUp
    }

    public var maxRateLimitRetries = 3
    public var maxTransientRetries = 2
    public var transientBaseDelay = 0.5
    public var maxJitter = 0.5
    public var maxRetryAfter = 20.0

    public init() {}

    /// `retriesSoFar`: how many retries this call has already made; `unitRandom` in [0, 1).
    public func decide(retriesSoFar: Int, outcome: Outcome, unitRandom: Double) -> Decision {
        let k = retriesSoFar + 1
        let jitter = min(max(unitRandom, 0), 0.999_999) * maxJitter
        var delay: Double
        switch outcome {
        case .connectionFault:
            guard k <= maxTransientRetries else { return .giveUp }
            return .retry(after: .seconds(transientBaseDelay * Double(1 << (k - 1)) + jitter))
        case .response(let status, _) where status == 429:
            guard k <= maxRateLimitRetries else { return .giveUp }
            delay = Double(k * k) + jitter
        case .response(let status, _) where (500..<600).contains(status):
            guard k <= maxTransientRetries else { return .giveUp }
            delay = transientBaseDelay * Double(1 << (k - 1)) + jitter
        case .response:
            return .giveUp
        }
        guard case .response(_, let headers) = outcome else { return .giveUp }
        if headers["Stripe-Should-Retry"]?.lowercased() == "false" { return .giveUp }
        if let text = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces),
            let seconds = Double(text), seconds >= 0
        {
            guard seconds <= maxRetryAfter else { return .giveUp }
            delay = max(delay, seconds)
        }
        return .retry(after: .seconds(delay))
    }
}

import Foundation

/// When to try a Stripe call again: the union of what stripe-ios and Stripe's server libraries retry,
/// each rule taken from one of them. Pure: the caller passes the randomness, so every branch tests
/// exactly. Retrying a POST is safe because every attempt carries the same Idempotency-Key.
///
/// In order (`k` is this retry's number; it counts every retry of the call, whatever caused it):
/// 1. `Stripe-Should-Retry: false` never retries (stripe-python's `_should_retry`: the API knows,
///    e.g. a request that would be a no-op).
/// 2. 429, with or without `Stripe-Should-Retry: true`: up to `maxRateLimitRetries` (3) retries,
///    before retry k wait k² s + [0, 0.5) s (stripe-ios after 21.3.1 to today, `URLSession+Retry`;
///    21.3.1 itself retries nothing). A rate limiter needs the time: stripe-python's short waits for
///    a 429 marked `true` would meet it again and spend the retries; `true` only says a retry is
///    safe, which a 429's always is.
/// 3. `Stripe-Should-Retry: true` retries any other status (stripe-python: e.g. a lock timeout).
/// 4. 409: retried (stripe-python): a retried POST meets `idempotency_key_in_use` while Stripe is
///    still processing the first attempt under the same key.
/// 5. 5xx and no response at all (refused, reset, timeout): retried (stripe-python).
/// 6. Anything else: never.
/// Rules 3 to 5 allow `maxTransientRetries` (2, stripe-python's default `max_network_retries`)
/// retries, waiting stripe-python's `_sleep_time_seconds`: min(0.5 s · 2^(k-1), 2 s) scaled by a
/// jitter in [0.5, 1), and at least 0.5 s. `Retry-After: <seconds>` from 0 to `maxRetryAfter` (60,
/// stripe-python's `MAX_RETRY_AFTER`) lengthens any wait to at least that; a larger value or the
/// HTTP-date form is ignored, as stripe-python does.
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
    public var maxTransientDelay = 2.0
    public var maxJitter = 0.5
    public var maxRetryAfter = 60.0

    public init() {}

    /// `retriesSoFar`: how many retries this call has already made; `unitRandom` in [0, 1).
    public func decide(retriesSoFar: Int, outcome: Outcome, unitRandom: Double) -> Decision {
        let k = retriesSoFar + 1
        let unit = min(max(unitRandom, 0), 0.999_999)
        guard case .response(let status, let headers) = outcome else {
            return k <= maxTransientRetries ? .retry(after: .seconds(transientDelay(k, unit))) : .giveUp
        }
        let shouldRetry = headers["Stripe-Should-Retry"]?.trimmingCharacters(in: .whitespaces).lowercased()
        var delay: Double
        if shouldRetry == "false" {
            return .giveUp
        } else if status == 429 {
            guard k <= maxRateLimitRetries else { return .giveUp }
            delay = Double(k * k) + unit * maxJitter
        } else if shouldRetry == "true" || status == 409 || (500..<600).contains(status) {
            guard k <= maxTransientRetries else { return .giveUp }
            delay = transientDelay(k, unit)
        } else {
            return .giveUp
        }
        if let text = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces), let seconds = Double(text),
            (0...maxRetryAfter).contains(seconds)
        {
            delay = max(delay, seconds)
        }
        return .retry(after: .seconds(delay))
    }

    /// stripe-python's `_sleep_time_seconds` without Retry-After.
    private func transientDelay(_ k: Int, _ unit: Double) -> Double {
        let base = min(transientBaseDelay * Double(1 << min(k - 1, 30)), maxTransientDelay)
        return max(transientBaseDelay, base * 0.5 * (1 + unit))
    }
}

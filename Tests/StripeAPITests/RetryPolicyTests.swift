import StripeAPI
import Testing

private let policy = RetryPolicy()

private func decide(_ retries: Int, _ status: Int, _ headers: HTTPHeaders = [:], random: Double = 0)
    -> RetryPolicy.Decision
{
    policy.decide(retriesSoFar: retries, outcome: .response(status: status, headers: headers), unitRandom: random)
}

/// stripe-ios 21.4 to 23.x (`URLSession+Retry`, read at c1dc94d): 429 three times, k² s + [0, 0.5) s.
@Test func rateLimitFollowsStripeIOS23sSchedule() {
    #expect(decide(0, 429) == .retry(after: .seconds(1)))
    #expect(decide(1, 429) == .retry(after: .seconds(4)))
    #expect(decide(2, 429, random: 0.5) == .retry(after: .seconds(9.25)))
    #expect(decide(3, 429) == .giveUp)
}

@Test func jitterStaysBelowHalfASecond() {
    guard case .retry(let d) = decide(0, 429, random: 1.0) else {
        Issue.record("no retry")
        return
    }
    #expect(d < .seconds(1.5) && d > .seconds(1.49))
    #expect(decide(0, 429, random: -3) == .retry(after: .seconds(1)))
}

/// stripe-python `_should_retry`: 5xx, twice (`max_network_retries` 2), waits from `_sleep_time_seconds`.
@Test func serverErrorsRetryTwiceWithStripePythonsBackoff() {
    #expect(decide(0, 500) == .retry(after: .seconds(0.5)))
    #expect(decide(0, 500, random: 0.9) == .retry(after: .seconds(0.5)))  // never under 0.5 s
    #expect(decide(1, 503, random: 0.2) == .retry(after: .seconds(0.6)))
    #expect(decide(2, 502) == .giveUp)
    #expect(decide(0, 599) == .retry(after: .seconds(0.5)))
}

@Test func connectionFaultsRetryTwice() {
    let fault = { (n: Int) in policy.decide(retriesSoFar: n, outcome: .connectionFault, unitRandom: 0.5) }
    #expect(fault(0) == .retry(after: .seconds(0.5)))
    #expect(fault(1) == .retry(after: .seconds(0.75)))
    #expect(fault(2) == .giveUp)
}

/// stripe-python retries 409: a retried POST can meet `idempotency_key_in_use` under the same key.
@Test func conflictIsRetriedAsStripePythonDoes() {
    #expect(decide(0, 409) == .retry(after: .seconds(0.5)))
    #expect(decide(1, 409, random: 0) == .retry(after: .seconds(0.5)))
    #expect(decide(2, 409) == .giveUp)
}

@Test func otherStatusesNeverRetry() {
    for status in [200, 201, 302, 400, 401, 402, 403, 404, 600] {
        #expect(decide(0, status) == .giveUp, "\(status)")
    }
}

/// A 429 the API marks retryable waits as any 429 does (stripe-ios's 1, 4, 9 s, three times), not
/// stripe-python's short transient waits: the rate limiter needs the time.
@Test func rateLimitMarkedRetryableKeepsTheRateLimitSchedule() {
    let retryable: HTTPHeaders = ["Stripe-Should-Retry": "true"]
    #expect(decide(0, 429, retryable) == .retry(after: .seconds(1)))
    #expect(decide(1, 429, retryable) == .retry(after: .seconds(4)))
    #expect(decide(2, 429, retryable) == .retry(after: .seconds(9)))
    #expect(decide(3, 429, retryable) == .giveUp)
}

/// stripe-python defers to the API both ways (stripe-ios would retry a 429 marked `false`).
@Test func stripeShouldRetryIsHonouredBothWays() {
    #expect(decide(0, 429, ["stripe-should-retry": "false"]) == .giveUp)
    #expect(decide(0, 500, ["Stripe-Should-Retry": "FALSE"]) == .giveUp)
    #expect(decide(0, 409, ["Stripe-Should-Retry": "false"]) == .giveUp)
    #expect(decide(0, 500, ["Stripe-Should-Retry": "true"]) == .retry(after: .seconds(0.5)))
    #expect(decide(0, 400, ["Stripe-Should-Retry": "true"]) == .retry(after: .seconds(0.5)))
    #expect(decide(2, 400, ["Stripe-Should-Retry": "true"]) == .giveUp)
}

/// stripe-python: a Retry-After of 0 to 60 s lengthens the wait; above, or as a date, it is ignored.
@Test func retryAfterLengthensUpTo60SecondsElseIsIgnored() {
    #expect(decide(0, 429, ["Retry-After": "3"]) == .retry(after: .seconds(3)))
    #expect(decide(1, 429, ["Retry-After": "2"]) == .retry(after: .seconds(4)))  // never shortens
    #expect(decide(0, 503, ["retry-after": " 1.5 "]) == .retry(after: .seconds(1.5)))
    #expect(decide(0, 429, ["Retry-After": "60"]) == .retry(after: .seconds(60)))
    #expect(decide(0, 429, ["Retry-After": "61"]) == .retry(after: .seconds(1)))
    #expect(decide(0, 429, ["Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"]) == .retry(after: .seconds(1)))
    #expect(decide(0, 429, ["Retry-After": "-5"]) == .retry(after: .seconds(1)))
}

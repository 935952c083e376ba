/// One attempt of a Stripe call as the client saw it, for the daemon's log and metrics. It holds
/// nothing secret: the path without its query (a GET's query may carry a client secret), never
/// the key, the body or the response.
public struct StripeAttempt: Sendable, Hashable {
    public var method: String
    /// `/v1/sources/src_123`: ids are not secrets, and a person looking at a log wants them.
    public var path: String
    /// No response at all (refused, reset, timed out): nil, and `failure` says what happened.
    public var status: Int?
    /// Stripe's `Request-Id`, which its support asks for.
    public var requestID: String?
    public var latency: Duration
    /// 1 for the first try, 2 for the first retry...
    public var attempt: Int
    public var idempotencyKey: String?
    /// Whether the client tries again after this attempt.
    public var willRetry: Bool
    /// The transport's error, redacted, when there was no response.
    public var failure: String?

    public init(
        method: String, path: String, status: Int?, requestID: String?, latency: Duration, attempt: Int,
        idempotencyKey: String?, willRetry: Bool, failure: String? = nil
    ) {
        self.method = method
        self.path = path
        self.status = status
        self.requestID = requestID
        self.latency = latency
        self.attempt = attempt
        self.idempotencyKey = idempotencyKey
        self.willRetry = willRetry
        self.failure = failure
    }

    /// Whether the attempt failed: no response, or a status other than 2xx.
    public var failed: Bool { status.map { !(200..<300).contains($0) } ?? true }

    /// The path with its ids replaced (`POST /v1/sources/{id}`): a label for metrics whose values
    /// are bounded by the code's own endpoints, whatever ids the calls carry.
    public var endpoint: String { "\(method) \(Self.template(path))" }

    /// A path as logged: whatever follows `?` may be a secret.
    static func withoutQuery(_ path: String) -> String {
        String(path.prefix { $0 != "?" && $0 != "#" })
    }

    static func template(_ path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return segments.enumerated().map { index, segment in
            // After the version (`v1`), a segment with a digit or a capital is an id: Stripe's
            // resource names (`payment_intents`, `ephemeral_keys`) are lower case words.
            // Looked at as bytes: Character's Unicode properties cost more than the rest of the call's log.
            index > 1 && segment.utf8.contains(where: { (48...57).contains($0) || (65...90).contains($0) })
                ? "{id}" : String(segment)
        }.joined(separator: "/")
    }
}

import Foundation
import JSONRPC
import StripeAPI

/// What one `GET /v1/sources/{id}?client_secret=` gave.
public enum PollFetchResult: Sendable {
    /// HTTP 200 (nil: the body did not decode as a Source).
    case source(Source?)
    /// Any non-200 HTTP status.
    case httpError(status: Int, StripeError)
    /// No response, of the kind the SDK retries without backoff: offline (-1009), connection lost (-1005).
    case connectivity(StripeError)
    /// No response, any other failure: ends the poll with that error.
    case transportFailure(StripeError)
    /// The request was cancelled: the poll stops silently.
    case cancelled
}

/// The durable part of a poll, stored by its owner after every change so a poll survives a restart
/// and keeps its deadline (`startedAt` is never reset).
public struct PollProgress: Codable, Sendable, Hashable {
    public var startedAt: Date
    /// The effective limit in seconds: `min(requested, 300)`.
    public var timeout: Double
    /// The wait before the next poll: 1.5 s, doubled per non-200, non-4xx status up to 24 s.
    public var interval: Double
    /// Consecutive failed polls (non-200 statuses and connectivity errors); 5 ends the poll.
    public var retryCount: Int
    /// Responses processed, counted after each is handled (as the SDK does).
    public var requestCount: Int
    /// `allResponseFields` of the last source a 200 gave; nil before one, or after a 200 that did not decode.
    public var latestSource: JSONValue?
    /// The error of the last response (nil after a 200), or the error the poll finished with.
    public var lastError: PollError?

    public init(startedAt: Date, requestedTimeout: Double) {
        self.startedAt = startedAt
        timeout = min(requestedTimeout, SourcePoller.maxTimeout)
        interval = SourcePoller.defaultInterval
        retryCount = 0
        requestCount = 0
    }
}

/// A `StripeError` that can be stored: everything `rpcData` shows, plus kind and card code.
public struct PollError: Codable, Sendable, Hashable, Error {
    public var stripeError: StripeError

    public init(_ error: StripeError) { stripeError = error }

    /// The SDK's generic connection error (code 40), reported when a poll ends knowing neither a
    /// source nor an error (e.g. a 200 whose body is not a Source).
    public static let genericConnection = PollError(
        StripeError(kind: .connection, message: "There was an error connecting to Stripe"))

    public var rpcData: JSONValue { stripeError.rpcData }

    private enum CodingKeys: String, CodingKey {
        case kind, type, code, cardErrorCode, declineCode, param, message, requestID, httpStatus
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // An unknown kind (a newer daemon's) reads as a plain API error rather than failing the poll.
        let kind = try c.decode(String.self, forKey: .kind)
        stripeError = StripeError(
            kind: StripeError.Kind(rawValue: kind) ?? .api,
            type: try c.decodeIfPresent(String.self, forKey: .type),
            code: try c.decodeIfPresent(String.self, forKey: .code),
            cardErrorCode: try c.decodeIfPresent(String.self, forKey: .cardErrorCode)
                .flatMap(StripeError.CardErrorCode.init(rawValue:)),
            declineCode: try c.decodeIfPresent(String.self, forKey: .declineCode),
            param: try c.decodeIfPresent(String.self, forKey: .param),
            message: try c.decode(String.self, forKey: .message),
            requestID: try c.decodeIfPresent(String.self, forKey: .requestID),
            httpStatus: try c.decodeIfPresent(Int.self, forKey: .httpStatus))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let e = stripeError
        try c.encode(e.kind.rawValue, forKey: .kind)
        try c.encodeIfPresent(e.type, forKey: .type)
        try c.encodeIfPresent(e.code, forKey: .code)
        try c.encodeIfPresent(e.cardErrorCode?.rawValue, forKey: .cardErrorCode)
        try c.encodeIfPresent(e.declineCode, forKey: .declineCode)
        try c.encodeIfPresent(e.param, forKey: .param)
        try c.encode(e.message, forKey: .message)
        try c.encodeIfPresent(e.requestID, forKey: .requestID)
        try c.encodeIfPresent(e.httpStatus, forKey: .httpStatus)
    }
}

/// How `SourcePoller.run` returned.
public enum PollEnd: Sendable, Hashable {
    /// The SDK's completion: fires once. `error` is never nil when `source` is.
    case finished(source: JSONValue?, error: PollError?)
    /// `pause()` was called; `run()` again resumes.
    case paused
    /// `stop()` was called, the request was cancelled, or the poll had already ended: nothing to report.
    case stopped
}

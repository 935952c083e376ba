import JSONRPC
import StripeAPI

/// Why something the daemon did for an object failed, as the object keeps it (a poll's or a
/// redirect's end, a payment context's result): the domain's own errors, typed and Codable.
/// How a failure reads to clients is the edge's business (`FailureRenderer`, which the daemon
/// supplies); no wire code is named here.
public enum Failure: Sendable, Hashable {
    case domain(DomainError)
    case appRequest(AppRequestError)
    case stripe(StripeError)
    /// An error from outside the domain (an adapter's, the daemon's own), as the edge described
    /// it when it was caught (`FailureRenderer.describe`): shown again as it is.
    case described(JSONValue)

    /// `error` as a failure: the domain's own errors as they are, any other as `renderer` describes it.
    public init(_ error: any Error, describedBy renderer: any FailureRenderer) {
        switch error {
        case let error as DomainError: self = .domain(error)
        case let error as AppRequestError: self = .appRequest(error)
        case let error as StripeError: self = .stripe(error)
        case let error as PollError: self = .stripe(error.stripeError)
        default: self = .described(renderer.describe(error))
        }
    }

    /// The customer closed the page a redirect showed (the SDK's cancellation).
    public var isRedirectCancelled: Bool {
        if case .domain(.redirectCancelled) = self { return true }
        return false
    }
}

/// How failures read to clients. The daemon supplies it (to the `EventLog`, where objects become
/// the state replies and events carry), so that the domain keeps `Failure`s and the edge alone
/// knows the wire.
public protocol FailureRenderer: Sendable {
    /// `failure` as an object's state shows it.
    func render(_ failure: Failure) -> JSONValue
    /// What to keep of an error the domain does not know, for `render` to show later.
    func describe(_ error: any Error) -> JSONValue
}

extension Failure: Codable {
    private enum CodingKeys: String, CodingKey { case domain, appRequest, stripe, described }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let error = try container.decodeIfPresent(DomainError.self, forKey: .domain) {
            self = .domain(error)
        } else if let error = try container.decodeIfPresent(AppRequestError.self, forKey: .appRequest) {
            self = .appRequest(error)
        } else if let error = try container.decodeIfPresent(PollError.self, forKey: .stripe) {
            self = .stripe(error.stripeError)
        } else if let description = try container.decodeIfPresent(JSONValue.self, forKey: .described) {
            self = .described(description)
        } else {
            self = Self.writtenAsSeen(try JSONValue(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .domain(let error): try container.encode(error, forKey: .domain)
        case .appRequest(let error): try container.encode(error, forKey: .appRequest)
        case .stripe(let error): try container.encode(PollError(error), forKey: .stripe)
        case .described(let description): try container.encode(description, forKey: .described)
        }
    }

    /// Rows written before failures were typed hold the error as clients saw it: it is shown as it
    /// was. The one a payment context acts on, the customer closing a redirect's page (the SDK's
    /// `com.stripe.lib` code 80 in its data), is read back as that.
    private static func writtenAsSeen(_ seen: JSONValue) -> Failure {
        guard let data = seen["data"]?.objectValue, data["sdkDomain"] == "com.stripe.lib", data["sdkCode"] == 80
        else { return .described(seen) }
        return .domain(.redirectCancelled(detail: data["message"]?.stringValue, data: data))
    }
}

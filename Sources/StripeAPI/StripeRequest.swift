import Foundation
import JSONRPC

/// One logical Stripe API call, before headers and retries.
public struct StripeRequest: Sendable, Hashable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
        case delete = "DELETE"
    }

    public var method: Method
    /// Below the base URL, with the version: `/v1/sources`.
    public var path: String
    /// Form body for POST, query for GET/DELETE (spec §7.2).
    public var params: [String: JSONValue]
    /// Overrides the configuration's key for this call (an ephemeral key secret for customer calls).
    public var key: StripeKey?
    /// Overrides the configuration's connected account (`Stripe-Account`).
    public var stripeAccount: String?
    /// Fixed by the caller when a retry of the *logical* operation (e.g. after a daemon restart) must
    /// be recognised by Stripe; otherwise generated once per POST and reused across its retries.
    public var idempotencyKey: String?
    /// Per-call headers; they override the defaults, as in the SDK.
    public var extraHeaders: HTTPHeaders

    public init(
        _ method: Method, _ path: String, params: [String: JSONValue] = [:], key: StripeKey? = nil,
        stripeAccount: String? = nil, idempotencyKey: String? = nil, extraHeaders: HTTPHeaders = [:]
    ) {
        self.method = method
        self.path = path
        self.params = params
        self.key = key
        self.stripeAccount = stripeAccount
        self.idempotencyKey = idempotencyKey
        self.extraHeaders = extraHeaders
    }
}

/// What every request shares.
public struct StripeConfiguration: Sendable {
    /// The SDK's API version since v20.1.0 (spec §7.3); models are written for this version's shapes.
    public static let sdkAPIVersion = "2020-08-27"

    public var baseURL: String
    public var key: StripeKey
    public var stripeAccount: String?
    public var apiVersion: String
    public var userAgent: StripeUserAgent {
        didSet { userAgentHeader = userAgent.headerValue }
    }
    /// Per attempt; retries each get a fresh timeout.
    public var timeout: Duration
    /// `userAgent.headerValue`, encoded once rather than for every request.
    private var userAgentHeader: String

    public init(
        key: StripeKey, baseURL: String = "https://api.stripe.com", stripeAccount: String? = nil,
        apiVersion: String = StripeConfiguration.sdkAPIVersion, userAgent: StripeUserAgent,
        timeout: Duration = .seconds(30)
    ) {
        self.key = key
        self.baseURL = baseURL
        self.stripeAccount = stripeAccount
        self.apiVersion = apiVersion
        self.userAgent = userAgent
        self.timeout = timeout
        userAgentHeader = userAgent.headerValue
    }

    /// The HTTP request for one attempt. `idempotencyKey` is the one chosen for the logical call, so
    /// every attempt of a POST carries the same value.
    public func httpRequest(for request: StripeRequest, idempotencyKey: String?) -> HTTPRequestData {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        var url = base + (request.path.hasPrefix("/") ? request.path : "/" + request.path)
        var body: Data?
        var headers: HTTPHeaders = [
            "Authorization": "Bearer \((request.key ?? key).secret)",
            "Stripe-Version": apiVersion,
            "X-Stripe-User-Agent": userAgentHeader,
        ]
        if let account = request.stripeAccount ?? stripeAccount { headers["Stripe-Account"] = account }
        if request.method == .post {
            body = FormEncoder.encodeData(request.params)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Content-Length"] = String(body!.count)
            if let idempotencyKey { headers["Idempotency-Key"] = idempotencyKey }
        } else {
            url = FormEncoder.appendingQuery(to: url, request.params)
        }
        for field in request.extraHeaders.fields { headers[field.name] = field.value }
        return HTTPRequestData(
            method: request.method.rawValue, url: url, headers: headers, body: body, timeout: timeout)
    }
}

/// The `X-Stripe-User-Agent` JSON. The SDK sends `lang`, `bindings_version`, device fields and the
/// app's info; stpd sends:
/// - `bindings_version`: stpd's version (the daemon passes StpdAPI.version; this target does not
///   depend on StpdProtocol);
/// - `lang`: "swift"; `publisher`: "stpd";
/// - `os_version`: when known (e.g. ProcessInfo's operatingSystemVersionString);
/// - `application`: `{name, version, url, partner_id}` for the app on whose behalf stpd calls, when
///   configured (the SDK's `appInfo`, nested as Stripe's server libraries do).
/// No device identifiers (`type`, `model`, `vendor_identifier`): a daemon has none worth sending.
public struct StripeUserAgent: Sendable, Hashable {
    public struct Application: Sendable, Hashable, Codable {
        public var name: String
        public var version: String?
        public var url: String?
        public var partnerID: String?
        enum CodingKeys: String, CodingKey {
            case name, version, url
            case partnerID = "partner_id"
        }
        public init(name: String, version: String? = nil, url: String? = nil, partnerID: String? = nil) {
            self.name = name
            self.version = version
            self.url = url
            self.partnerID = partnerID
        }
    }

    public var bindingsVersion: String
    public var osVersion: String?
    public var application: Application?

    public init(bindingsVersion: String, osVersion: String? = nil, application: Application? = nil) {
        self.bindingsVersion = bindingsVersion
        self.osVersion = osVersion
        self.application = application
    }

    /// The SDK's `payment_user_agent` fraud signal (`stripe-ios/<version>; variant.<variant>`) with
    /// stpd's own identity and version.
    public var paymentUserAgent: String { "stpd/\(bindingsVersion)" }

    /// Compact JSON with sorted keys, so the header is stable for tests.
    public var headerValue: String {
        var object: [String: JSONValue] = [
            "bindings_version": .string(bindingsVersion), "lang": "swift", "publisher": "stpd",
        ]
        if let osVersion { object["os_version"] = .string(osVersion) }
        if let application, let value = try? JSONCoding.value(of: application) {
            object["application"] = value
        }
        let data = (try? JSONCoding.encode(JSONValue.object(object))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

import Foundation
import JSONRPC
import StripeAPI
import StripeHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A merchant backend URL or Authorization value that stpd refuses to use, found when the backend
/// is set up (never at the first request). `description` is the message to show an operator; it
/// never quotes the Authorization value nor a URL's `user:password@`.
public struct BackendConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong: "merchant backend URL", "ephemeral key URL", "Authorization value".
    public var setting: String
    public var reason: String

    public init(setting: String, reason: String) {
        self.setting = setting
        self.reason = reason
    }

    public var description: String { "invalid \(setting): \(reason)" }
}

/// The merchant's backend answered with a non-2xx status and a body that is not a Stripe-shaped
/// `{"error": {...}}` (those become the `StripeError` they describe): an error page, a framework's
/// own error JSON, a proxy's 502. Carries the status and a short excerpt of the body with secrets
/// masked (`Redaction`, plus the configured Authorization value itself if the body echoes it).
public struct MerchantBackendError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    /// `GET`, `POST`.
    public var method: String
    /// The route as stpd names it: `/customer/payment_methods`, or the key endpoint's URL path.
    public var route: String
    /// At most `BackendHTTP.excerptLength` characters, whitespace collapsed, secrets masked;
    /// `(empty body)` when there was none.
    public var excerpt: String
    /// The backend's `Request-Id` header, when it relays one.
    public var requestID: String?

    public init(status: Int, method: String, route: String, excerpt: String, requestID: String? = nil) {
        self.status = status
        self.method = method
        self.route = route
        self.excerpt = excerpt
        self.requestID = requestID
    }

    public var description: String {
        "the merchant backend answered HTTP \(status) to \(method) \(route): \(excerpt)"
    }
}

/// The HTTP exchange both merchant-backend clients share: headers, the one retry a GET may get,
/// and the mapping of answers to values and errors.
struct BackendHTTP: Sendable {
    static let excerptLength = 200
    /// Only this much of an error body is looked at for the excerpt.
    static let excerptScanBytes = 4096

    let transport: any StripeHTTPTransport
    let authorization: String?
    let timeout: Duration
    let userAgent: String

    init(transport: any StripeHTTPTransport, authorization: String?, timeout: Duration, userAgent: String)
        throws(BackendConfigurationError)
    {
        if let authorization { try Self.validateHeaderValue(authorization, setting: "Authorization value") }
        try Self.validateHeaderValue(userAgent, setting: "User-Agent value")
        guard timeout > .zero else {
            throw BackendConfigurationError(setting: "merchant backend timeout", reason: "must be positive")
        }
        self.transport = transport
        self.authorization = authorization
        self.timeout = timeout
        self.userAgent = userAgent
    }

    /// Sends one request; when `retryOnce`, a second attempt follows a connection fault (refused,
    /// reset, closed without an answer) but not a timeout: a timed-out attempt already used the
    /// whole budget. Throws `StripeError` of kind `.connection` when no attempt got a response.
    func send(
        method: String, url: String, route: String, body: Data? = nil, contentType: String? = nil, retryOnce: Bool
    ) async throws -> HTTPResponseData {
        var headers: StripeAPI.HTTPHeaders = ["Accept": "application/json", "User-Agent": userAgent]
        if let authorization { headers["Authorization"] = authorization }
        if let contentType { headers["Content-Type"] = contentType }
        let request = HTTPRequestData(method: method, url: url, headers: headers, body: body, timeout: timeout)
        var attempts = 0
        while true {
            try Task.checkCancellation()
            attempts += 1
            do {
                return try await transport.send(request)
            } catch {
                if Task.isCancelled || error is CancellationError { throw CancellationError() }
                if retryOnce, attempts == 1, Self.isRetryable(error) { continue }
                // The transport's text may quote the URL; mask what could be secret in it.
                throw StripeError(
                    kind: .connection,
                    message: "Could not reach the merchant backend (\(method) \(route)) after \(attempts) "
                        + "attempt(s): \(mask(String(describing: error)))")
            }
        }
    }

    /// The body as JSON (nil when it is not JSON) after the error rules: a Stripe-shaped
    /// `{"error": {...}}` body throws its `StripeError` whatever the status (a backend that relays a
    /// Stripe error with a 200 still reports an error); any other non-2xx throws
    /// `MerchantBackendError`.
    func interpret(_ response: HTTPResponseData, method: String, route: String) throws -> JSONValue? {
        let requestID = response.headers["Request-Id"]
        let json = try? JSONCoding.decode(JSONValue.self, from: response.body)
        if let json, json.objectValue != nil,
            var error = StripeError(body: json, httpStatus: response.status, requestID: requestID)
        {
            error.message = mask(error.message)
            throw error
        }
        guard (200..<300).contains(response.status) else {
            throw MerchantBackendError(
                status: response.status, method: method, route: route, excerpt: excerpt(response.body, json: json),
                requestID: requestID)
        }
        return json
    }

    /// A 2xx answer that is not what the route returns (the SDK's "failed to parse", code 60).
    func undecodable(_ response: HTTPResponseData, method: String, route: String, reason: String) -> StripeError {
        StripeError(
            kind: .decoding,
            message: "The merchant backend's answer to \(method) \(route) could not be decoded: \(reason)",
            requestID: response.headers["Request-Id"], httpStatus: response.status)
    }

    /// `Redaction.redact`, and the configured Authorization value (and its credentials part, after
    /// the scheme) masked wherever it appears.
    func mask(_ text: String) -> String {
        var out = text
        if let authorization {
            var secrets = [authorization]
            if let space = authorization.firstIndex(of: " ") {
                secrets.append(String(authorization[authorization.index(after: space)...]))
            }
            for secret in secrets where secret.count >= 4 {
                out = out.replacingOccurrences(of: secret, with: Redaction.mask)
            }
        }
        return Redaction.redact(out)
    }

    /// A short, single-line, masked excerpt of an error body. JSON is redacted as JSON first (so
    /// `"secret"`/`"client_secret"` fields and card numbers go), then as text; the text is masked
    /// before it is cut, so a secret is never cut in two and half of it shown.
    func excerpt(_ body: Data, json: JSONValue?) -> String {
        var text: String
        if let json, let data = try? JSONCoding.encode(Redaction.redact(json)) {
            text = String(decoding: data.prefix(Self.excerptScanBytes), as: UTF8.self)
        } else {
            text = String(decoding: body.prefix(Self.excerptScanBytes), as: UTF8.self)
        }
        text = mask(text)
        let words = text.split(whereSeparator: { $0.isWhitespace || $0.isControl })
        text = words.joined(separator: " ")
        if text.isEmpty { return "(empty body)" }
        if text.count > Self.excerptLength { text = String(text.prefix(Self.excerptLength)) + "…" }
        return text
    }

    private static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? StripeHTTPTransportError else { return true }
        return error.kind == .connection
    }

    private static func validateHeaderValue(_ value: String, setting: String) throws(BackendConfigurationError) {
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw BackendConfigurationError(setting: setting, reason: "is empty (leave it unset to send none)")
        }
        // No CR/LF (header injection) or other control characters; the value itself is never quoted.
        guard value.unicodeScalars.allSatisfy({ $0 == "\t" || ($0.value >= 0x20 && $0.value != 0x7F) }) else {
            throw BackendConfigurationError(setting: setting, reason: "contains control characters (CR, LF, …)")
        }
    }
}

extension Character {
    fileprivate var isControl: Bool { unicodeScalars.allSatisfy { $0.properties.generalCategory == .control } }
}

// MARK: - URLs

enum BackendURL {
    /// Checks a merchant backend URL: http or https, a host, no `user:password@`, no fragment, no
    /// query unless `allowQuery`; plain http only to a loopback host (`localhost`, 127.0.0.0/8,
    /// `::1`), since the Authorization header and the customer's data would travel in clear.
    /// Returns the URL as given, trailing slashes removed when `stripTrailingSlash`.
    static func validate(_ text: String, setting: String, allowQuery: Bool, stripTrailingSlash: Bool)
        throws(BackendConfigurationError) -> String
    {
        func fail(_ reason: String) -> BackendConfigurationError {
            BackendConfigurationError(setting: setting, reason: reason)
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw fail("\(quoted(text)) is not a URL (expected https://host/path)")
        }
        guard scheme == "https" || scheme == "http" else {
            throw fail("\(quoted(text)) is not an http(s) URL (scheme \(scheme))")
        }
        if url.user != nil || url.password != nil {
            throw fail("the URL must not carry credentials (user:password@); pass them as the Authorization value")
        }
        guard let host = url.host, !host.isEmpty else { throw fail("\(quoted(text)) has no host") }
        if url.fragment != nil { throw fail("\(quoted(text)) must not have a fragment (#…)") }
        if !allowQuery, url.query != nil {
            throw fail("\(quoted(text)) must not have a query (?…): stpd appends its route paths to it")
        }
        if scheme == "http", !isLoopback(host) {
            throw fail(
                "\(quoted(text)) uses plain http to a host that is not loopback; use https (the Authorization "
                    + "header and the customer's data would travel in clear). Plain http is only accepted for "
                    + "localhost, 127.0.0.0/8 and ::1")
        }
        var out = text
        if stripTrailingSlash { while out.hasSuffix("/") { out.removeLast() } }
        return out
    }

    /// `localhost`, an IPv4 address in 127.0.0.0/8, `::1` or an IPv4-mapped 127.x address.
    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { $0[0] } == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }  // ::1
            // ::ffff:127.x.x.x
            return bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        }
        return false
    }

    /// The URL for messages: masked, and cut when long.
    /// The URL for an error message: redacted, and without its query, which may hold a token.
    private static func quoted(_ text: String) -> String {
        let withoutQuery = text.firstIndex(of: "?").map { text[..<$0] + "?…" } ?? text
        let masked = Redaction.redact(withoutQuery)
        return "\"" + (masked.count > 200 ? masked.prefix(200) + "…" : masked) + "\""
    }

    /// The path of a URL, for naming a route in errors (the full URL can hold a token in its query).
    static func path(of text: String) -> String {
        guard let url = URL(string: text) else { return "/" }
        let path = url.path
        return path.isEmpty ? "/" : path
    }
}

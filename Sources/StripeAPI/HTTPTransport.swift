import Foundation

/// Header fields in order, looked up case-insensitively (HTTP field names are case-insensitive and
/// Stripe's own casing varies: `request-id` vs `Request-Id`).
public struct HTTPHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    public var fields: [(name: String, value: String)]

    public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }
    public init(dictionaryLiteral elements: (String, String)...) { fields = elements.map { ($0.0, $0.1) } }

    /// The first value named `name`; setting replaces every field of that name.
    public subscript(name: String) -> String? {
        get { fields.first { Self.same($0.name, name) }?.value }
        set {
            fields.removeAll { Self.same($0.name, name) }
            if let newValue { fields.append((name, newValue)) }
        }
    }

    /// Header names are ASCII tokens (RFC 9110 §5.1), compared without case: byte by byte, where
    /// Foundation's `caseInsensitiveCompare` cost 2% of a poll's CPU.
    public static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8) { lower($0) == lower($1) }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte | 0x20 : byte
    }

    public static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool {
        a.fields.elementsEqual(b.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for f in fields {
            hasher.combine(f.name)
            hasher.combine(f.value)
        }
    }
}

/// One HTTP exchange as the transport sees it: no Stripe knowledge, so an AsyncHTTPClient transport
/// (or a test fake) only moves bytes.
public struct HTTPRequestData: Sendable, Hashable {
    public var method: String
    public var url: String
    public var headers: HTTPHeaders
    public var body: Data?
    /// For this one attempt; the transport must throw when it passes (a timeout is a connection fault).
    public var timeout: Duration

    public init(method: String, url: String, headers: HTTPHeaders, body: Data?, timeout: Duration) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

public struct HTTPResponseData: Sendable, Hashable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data

    public init(status: Int, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// The seam between the pure client and the network. Any thrown error means no HTTP response was
/// received (refused, reset, TLS, timeout): the client treats it as a connection fault and may retry.
/// A response with any status, 5xx included, must be returned, not thrown.
public protocol StripeHTTPTransport: Sendable {
    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData
}

/// How an attempt that got no response failed, in the terms the SDK's Source poller decides by:
/// it retries only `NSURLErrorNotConnectedToInternet` (-1009) and `NSURLErrorNetworkConnectionLost`
/// (-1005); a timeout, a refused connect, a DNS or TLS failure ends the poll with that error.
public enum TransportFault: String, Sendable, Hashable {
    /// No network to reach Stripe on (-1009).
    case offline
    /// The connection broke before the whole response arrived (-1005).
    case connectionLost
    /// Anything else: timeout, refused, DNS, TLS.
    case other
}

/// A transport error that knows its `TransportFault`; any other thrown error counts as `.other`.
public protocol TransportFaultReporting: Error {
    var fault: TransportFault { get }
}

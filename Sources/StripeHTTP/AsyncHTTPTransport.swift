import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import StripeAPI
import Synchronization

/// Why an attempt got no usable response. `StripeClient` treats every error a transport throws as a
/// connection fault (retryable by its `RetryPolicy`), so the kind is for logs and tests only.
/// `description` may quote the URL; `StripeClient` redacts it before it reaches a caller.
public struct StripeHTTPTransportError: TransportFaultReporting, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The per-attempt timeout passed before the whole response (head and body) arrived.
        case timeout
        /// Refused, reset, closed before or while answering, TLS failure, DNS failure.
        case connection
        /// The body exceeded the transport's limit (the response is abandoned, not truncated).
        case responseTooLarge
        /// The request could not be sent at all (a malformed URL or method).
        case invalidRequest
    }

    public var kind: Kind
    public var detail: String
    /// What the SDK's poller would make of it (`.connection` faults only; others are `.other`).
    public var fault: TransportFault

    public init(_ kind: Kind, _ detail: String, fault: TransportFault = .other) {
        self.kind = kind
        self.detail = detail
        self.fault = kind == .connection ? fault : .other
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}

/// `StripeHTTPTransport` over AsyncHTTPClient.
///
/// - Every status (3xx, 4xx, 5xx) comes back as a response; redirects are not followed when the
///   transport makes its own client (Stripe's API never redirects, and following one would resend
///   the Authorization header elsewhere).
/// - Throws `StripeHTTPTransportError` only when no complete response arrived: refused, dropped,
///   timed out (the request's `timeout` bounds the whole attempt, head *and* body, while
///   AsyncHTTPClient's own deadline stops at the head), or a body over `maxResponseBodySize`.
/// - Sends the given headers as given, except `Content-Length`, which AsyncHTTPClient computes from
///   the body (so it is never sent twice or wrong).
/// - Throws `CancellationError` when the calling task is cancelled.
public final class AsyncHTTPTransport: StripeHTTPTransport {
    public static let defaultMaxResponseBodySize = 16 * 1024 * 1024

    public let client: HTTPClient
    public let maxResponseBodySize: Int
    private let ownsClient: Bool
    private let isShutDown = Mutex(false)

    /// Uses `client` when given (the caller keeps owning it: `shutdown()` leaves it running; its
    /// configuration should not follow redirects), else makes one on the shared NIO event loop group
    /// that follows no redirects, leaves bodies compressed as sent (stpd asks for no compression), and
    /// does not retry failed connects itself.
    public init(client: HTTPClient? = nil, maxResponseBodySize: Int = AsyncHTTPTransport.defaultMaxResponseBodySize) {
        if let client {
            self.client = client
            ownsClient = false
        } else {
            var configuration = HTTPClient.Configuration()
            configuration.redirectConfiguration = .disallow
            configuration.decompression = .disabled
            // A refused or failed connect fails the attempt at once instead of being retried inside
            // it until the timeout: `StripeClient`'s retry policy owns retries and their backoff.
            configuration.connectionPool.retryConnectionEstablishment = false
            self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            ownsClient = true
        }
        self.maxResponseBodySize = maxResponseBodySize
    }

    /// Shuts down the client the transport made; idempotent; a no-op for a client it was given.
    /// Must be called before the transport is dropped when it owns the client.
    public func shutdown() async throws {
        guard ownsClient else { return }
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        if first { try await client.shutdown() }
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = .init(rawValue: request.method)
        for field in request.headers.fields
        where field.name.caseInsensitiveCompare("Content-Length") != .orderedSame {
            outgoing.headers.add(name: field.name, value: field.value)
        }
        if let body = request.body { outgoing.body = .bytes(body) }

        let prepared = outgoing
        let timeout = request.timeout
        let nanoseconds = Self.nanoseconds(timeout)
        let client = client
        let limit = maxResponseBodySize
        do {
            return try await withThrowingTaskGroup(of: HTTPResponseData.self) { group in
                group.addTask {
                    let response = try await client.execute(prepared, timeout: .nanoseconds(nanoseconds))
                    var headers = StripeAPI.HTTPHeaders()
                    for (name, value) in response.headers { headers.fields.append((name, value)) }
                    if let length = headers["Content-Length"].flatMap(Int.init), length > limit {
                        throw StripeHTTPTransportError(
                            .responseTooLarge, "Content-Length \(length) exceeds the \(limit)-byte limit")
                    }
                    var body = Data()
                    for try await chunk in response.body {
                        guard body.count + chunk.readableBytes <= limit else {
                            throw StripeHTTPTransportError(
                                .responseTooLarge, "the body exceeds the \(limit)-byte limit")
                        }
                        body.append(contentsOf: chunk.readableBytesView)
                    }
                    return HTTPResponseData(status: Int(response.status.code), headers: headers, body: body)
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw StripeHTTPTransportError(.timeout, "no complete response within \(timeout)")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.classify(error, url: request.url)
        }
    }

    static func classify(_ error: any Error, url: String) -> StripeHTTPTransportError {
        if let error = error as? StripeHTTPTransportError { return error }
        if let error = error as? HTTPClientError {
            if [.deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout].contains(error) {
                return StripeHTTPTransportError(.timeout, "\(error)")
            }
            if [.invalidURL, .emptyHost, .emptyScheme].contains(error) {
                // Without its query: GETs carry client secrets there.
                return StripeHTTPTransportError(.invalidRequest, "\(error) (\(url.prefix { $0 != "?" }))")
            }
            return StripeHTTPTransportError(.connection, "\(error)", fault: fault(of: error))
        }
        return StripeHTTPTransportError(.connection, String(describing: error), fault: fault(of: error))
    }

    /// URLSession's -1005 is a connection that broke before the response was whole (reset, closed,
    /// broken pipe); -1009 a network that is not there (unreachable or down when connecting).
    static func fault(of error: any Error) -> TransportFault {
        if let error = error as? HTTPClientError {
            return error == .remoteConnectionClosed ? .connectionLost : .other
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNRESET, EPIPE, ECONNABORTED: return .connectionLost
            case ENETUNREACH, ENETDOWN: return .offline
            default: return .other
            }
        }
        if error is ChannelError { return (error as? ChannelError) == .eof ? .connectionLost : .other }
        if let error = error as? NIOConnectionError {
            // Offline only when every address failed for want of a network, not when one was refused.
            let faults = error.connectionErrors.map { fault(of: $0.error) }
            return !faults.isEmpty && faults.allSatisfy { $0 == .offline } ? .offline : .other
        }
        return .other
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let total = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !total.overflow else { return seconds < 0 ? 0 : .max }
        return max(0, total.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue)
    }
}

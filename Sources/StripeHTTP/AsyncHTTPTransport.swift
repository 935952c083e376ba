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
        /// Connected, but the per-attempt timeout passed before the whole response (head and body) arrived.
        case timeout
        /// Refused, reset, closed before or while answering, TLS failure, DNS failure, a connect that
        /// timed out.
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
///   AsyncHTTPClient's own deadline stops at the head), or a body over `maxResponseBodySize`. A
///   connect gives up after `connectTimeout`: shorter than a request's `timeout`, it tells a connect
///   nobody answers (offline) from an answer that does not come (a timeout).
/// - Sends the given headers as given, except `Content-Length`, which AsyncHTTPClient computes from
///   the body (so it is never sent twice or wrong).
/// - Throws `CancellationError` when the calling task is cancelled.
public final class AsyncHTTPTransport: StripeHTTPTransport {
    public static let defaultMaxResponseBodySize = 16 * 1024 * 1024
    /// HTTP/1.1 connections kept per host at most (when the transport makes its own client).
    public static let maxConnectionsPerHost = 64

    public let client: HTTPClient
    public let maxResponseBodySize: Int
    private let ownsClient: Bool
    private let isShutDown = Mutex(false)

    /// Uses `client` when given (the caller keeps owning it: `shutdown()` leaves it running; its
    /// configuration should not follow redirects), else makes one on the shared NIO event loop group
    /// that follows no redirects, leaves bodies compressed as sent (stpd asks for no compression),
    /// does not retry failed connects itself, gives a connect `connectTimeout` and keeps up to
    /// `maxConnectionsPerHost` connections per host.
    public init(
        client: HTTPClient? = nil, maxResponseBodySize: Int = AsyncHTTPTransport.defaultMaxResponseBodySize,
        connectTimeout: Duration = .seconds(10)
    ) {
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
            configuration.timeout.connect = .nanoseconds(Self.nanoseconds(connectTimeout))
            // Thousands of polls keep many requests in flight at once: with AsyncHTTPClient's 8
            // HTTP/1.1 connections per host, they queued for a connection and every poll's
            // interval stretched with the queue. (HTTP/2, which api.stripe.com speaks, multiplexes.)
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit =
                Self.maxConnectionsPerHost
            // stpd records no traces: without a tracer, a request skips the span and its attributes
            // (the URL parsed again, on every request: 1% of a created session's CPU).
            configuration.tracing.tracer = nil
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
        for field in request.headers.fields where !StripeAPI.HTTPHeaders.same(field.name, "Content-Length") {
            outgoing.headers.add(name: field.name, value: field.value)
        }
        if let body = request.body { outgoing.body = .bytes(body) }

        // AsyncHTTPClient's deadline covers connecting and the head, and tells a connect that timed
        // out from an answer that did not come; the body gets what is left of the same deadline.
        let deadline = NIODeadline.now() + .nanoseconds(Self.nanoseconds(request.timeout))
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            var headers = StripeAPI.HTTPHeaders()
            for (name, value) in response.headers { headers.fields.append((name, value)) }
            if let length = headers["Content-Length"].flatMap(Int.init), length > maxResponseBodySize {
                throw StripeHTTPTransportError(
                    .responseTooLarge, "Content-Length \(length) exceeds the \(maxResponseBodySize)-byte limit")
            }
            let body = try await Self.collect(
                response.body, limit: maxResponseBodySize, until: deadline, on: client.eventLoopGroup.any())
            return HTTPResponseData(status: Int(response.status.code), headers: headers, body: body)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw Self.classify(error, url: request.url)
        }
    }

    /// The whole body, unless it passes `limit` bytes or `deadline` comes first. One task reads
    /// it; the deadline is a timer of `eventLoop`'s that cancels that task, itself cancelled with
    /// the body. (A `Task.sleep` would leave its timer armed in libdispatch until the deadline, one
    /// per request, whose firing kept an idle daemon busy; a task group of a reader and a timer
    /// task cost two tasks and a group per request, on every poll.)
    private static func collect(
        _ body: HTTPClientResponse.Body, limit: Int, until deadline: NIODeadline, on eventLoop: any EventLoop
    ) async throws -> Data {
        let reader = Task {
            var data = Data()
            for try await chunk in body {
                guard data.count + chunk.readableBytes <= limit else {
                    throw StripeHTTPTransportError(.responseTooLarge, "the body exceeds the \(limit)-byte limit")
                }
                data.append(contentsOf: chunk.readableBytesView)
            }
            return data
        }
        let timedOut = Flag()
        let timer = eventLoop.scheduleTask(deadline: deadline) {
            timedOut.set()
            reader.cancel()
        }
        defer { timer.cancel() }
        let outcome = await withTaskCancellationHandler {
            await reader.result
        } onCancel: {
            reader.cancel()
        }
        // A cancelled read may end early without an error: only a read that neither the deadline
        // nor the caller cut short is the whole body.
        if timedOut.isSet { throw StripeHTTPTransportError(.timeout, "the body did not arrive whole in time") }
        try Task.checkCancellation()
        return try outcome.get()
    }

    /// Set once by the deadline's timer (on an event loop), read by the waiting task.
    private final class Flag: Sendable {
        private let value = Atomic(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }

    static func classify(_ error: any Error, url: String) -> StripeHTTPTransportError {
        if let error = error as? StripeHTTPTransportError { return error }
        if let error = error as? HTTPClientError {
            if [.deadlineExceeded, .readTimeout, .writeTimeout].contains(error) {
                return StripeHTTPTransportError(.timeout, "\(error)")
            }
            if [.invalidURL, .emptyHost, .emptyScheme].contains(error) {
                // Without its query: GETs carry client secrets there.
                return StripeHTTPTransportError(.invalidRequest, "\(error) (\(url.prefix { $0 != "?" }))")
            }
        }
        return StripeHTTPTransportError(.connection, String(describing: error), fault: fault(of: error))
    }

    /// URLSession's -1009 (offline) is a network that is not there: the name does not resolve, no
    /// route or interface reaches the host, or the connect is never answered, which is what a machine
    /// that lost its network sees (a name that truly does not exist looks the same from here). -1005
    /// (connection lost) is a connection that broke before the response was whole. A refused connect
    /// or a TLS failure has a network that answered: neither.
    static func fault(of error: any Error) -> TransportFault {
        switch error {
        case let error as HTTPClientError:
            if error == .connectTimeout { return .offline }
            return error == .remoteConnectionClosed ? .connectionLost : .other
        case let error as IOError:
            switch error.errnoCode {
            case ECONNRESET, EPIPE, ECONNABORTED: return .connectionLost
            case ENETUNREACH, ENETDOWN, EHOSTUNREACH, EHOSTDOWN, ETIMEDOUT: return .offline
            default: return .other
            }
        case let error as ChannelError:
            switch error {
            case .eof: return .connectionLost
            case .connectTimeout: return .offline
            default: return .other
            }
        case is SocketAddressError.UnknownHost:
            return .offline
        case let error as NIOConnectionError:
            // No address to try: the name led nowhere. Else offline only when every address failed
            // for want of a network, not when one was refused.
            if error.connectionErrors.isEmpty { return .offline }
            let faults = error.connectionErrors.map { fault(of: $0.error) }
            return faults.allSatisfy { $0 == .offline } ? .offline : .other
        default:
            return .other
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let total = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !total.overflow else { return seconds < 0 ? 0 : .max }
        return max(0, total.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue)
    }
}

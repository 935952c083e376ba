import StripeAPI
import StripeHTTP
import Synchronization

/// An AsyncHTTPClient transport made on first use: a daemon that never calls out never starts
/// HTTP machinery, and shutting down an unused one is a no-op.
public final class LazyHTTPTransport: StripeHTTPTransport {
    private let state = Mutex<(transport: AsyncHTTPTransport?, closed: Bool)>((nil, false))
    private let connectTimeout: Duration

    /// A connect gets at most 10 s, and half of `requestTimeout` when that is less: always short of
    /// the request's own timeout, so a connect nobody answers (offline, which a poll retries) is told
    /// from a server that does not answer (a timeout, which ends it).
    public init(requestTimeout: Duration = .seconds(30)) {
        connectTimeout = min(.seconds(10), requestTimeout / 2)
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let transport = try state.withLock { s in
            if s.closed { throw StripeError(kind: .connection, message: "stpd is shutting down") }
            if let made = s.transport { return made }
            let made = AsyncHTTPTransport(connectTimeout: connectTimeout)
            s.transport = made
            return made
        }
        return try await transport.send(request)
    }

    public func shutdown() async throws {
        let transport = state.withLock { s in
            s.closed = true
            defer { s.transport = nil }
            return s.transport
        }
        try await transport?.shutdown()
    }
}

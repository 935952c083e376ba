/// The loopback HTTP listener that brings a customer's browser back to stpd (`LoopbackReturn`):
/// the daemon's, on 127.0.0.1. The domain only asks it for the port to name in a return URL.
public protocol LoopbackListener: Sendable {
    /// Listens (if it did not already) and answers the port new loopback returns name; throws
    /// when it cannot listen (a pinned `STPD_LOOPBACK_PORT` in use).
    func openPort() async throws -> Int
}

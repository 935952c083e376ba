import Foundation
import JSONRPC
import Logging
import NIOCore
import RPCTransport
import ServiceLifecycle
import Synchronization

/// `UnixListener.bind` sets the mode through the process-wide umask, so two binds running at
/// once (tests run in parallel) can each get the other's mode. Tests that are not about that
/// race bind through this lock.
private let bindLock = Mutex(())

public func bindSerialized(path: String, mode: mode_t) throws -> ListeningSocket {
    try withBindLock { try UnixListener.bind(path: path, mode: mode) }
}

/// Runs `body` while no other `bindSerialized` can run (for a test of the race itself).
public func withBindLock<R>(_ body: () throws -> R) rethrows -> R {
    try bindLock.withLock { _ in try body() }
}

/// Test servers log nothing: their output would bury the test report.
public let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A running `RPCServer` as a test sees it.
public struct TestServer: Sendable {
    /// Where clients connect.
    public let socketPath: String
    let group: ServiceGroup
    /// Open once `RPCServer.run()` has returned.
    public let stopped: Gate

    /// Begins graceful shutdown (as SIGTERM does in the daemon) without waiting for it.
    public func triggerGracefulShutdown() async {
        await group.triggerGracefulShutdown()
    }
}

/// Binds a fresh socket in a temporary directory, runs an `RPCServer` for `service` in a
/// `ServiceGroup` (as the daemon does, so graceful shutdown behaves the same), waits until it
/// listens, runs `body`, then shuts the server down gracefully and removes the directory.
public func withTestServer<R: Sendable>(
    service: some RPCService,
    configuration: RPCServerConfiguration = RPCServerConfiguration(),
    credentials: @escaping @Sendable (Channel) -> EventLoopFuture<PeerCredentials> = PeerCredentials.of,
    _ body: @Sendable (TestServer) async throws -> R
) async throws -> R {
    let directory = try TemporaryDirectory(prefix: "stpd-rpc")
    defer { directory.remove() }
    let path = directory.appending("s.sock")
    let socket = try bindSerialized(path: path, mode: 0o600)

    let (listening, listeningSink) = AsyncStream<Bool>.makeStream()
    let server = RPCServer(
        socket: socket, configuration: configuration, service: service, logger: quietLogger,
        onListening: { listeningSink.yield(true) }, credentials: credentials)
    var groupConfiguration = ServiceGroupConfiguration(services: [.init(service: server)], logger: quietLogger)
    // A safety net only: a test that leaves a request hanging is cancelled rather than stuck forever.
    groupConfiguration.maximumGracefulShutdownDuration = .seconds(30)
    let group = ServiceGroup(configuration: groupConfiguration)
    let stopped = Gate()

    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask {
            defer {
                stopped.open()
                listeningSink.yield(false)
                listeningSink.finish()
            }
            try await group.run()
        }
        var events = listening.makeAsyncIterator()
        guard await events.next() == true else {
            // The server stopped before it listened: surface its error.
            try await tasks.waitForAll()
            throw TestSupportError.unexpected("the server stopped before listening")
        }
        let result: Result<R, any Error>
        do {
            result = .success(try await body(TestServer(socketPath: path, group: group, stopped: stopped)))
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
        return try result.get()
    }
}

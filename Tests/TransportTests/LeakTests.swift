import Foundation
import JSONRPC
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import RPCTransport

/// Keeps only weak references to the connections it sees, and to their channels.
private final class WatchingService: RPCService {
    private final class Weak: @unchecked Sendable {
        weak var connection: RPCConnection?
        weak var channel: (any Channel)?
    }

    private let seen = Mutex<[Weak]>([])
    private let closed = Mutex(0)

    func handle(_ request: Request, on connection: RPCConnection) async -> Response? {
        request.id.map { Response(id: $0, result: true) }
    }

    func connectionOpened(_ connection: RPCConnection) {
        let weak = Weak()
        weak.connection = connection
        weak.channel = connection.channel
        seen.withLock { $0.append(weak) }
    }

    func connectionClosed(_ connection: RPCConnection) { closed.withLock { $0 += 1 } }

    var closedCount: Int { closed.withLock { $0 } }
    var alive: (connections: Int, channels: Int) {
        seen.withLock { s in (s.filter { $0.connection != nil }.count, s.filter { $0.channel != nil }.count) }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct LeakTests {
    /// Nothing of a closed connection is kept (a timer holding its channel once kept each for
    /// 30 s: a flood of short connections grew the heap by 4 KiB a connection).
    @Test(arguments: [false, true])
    func closedConnectionsAreReleased(sendsARequest: Bool) async throws {
        let service = WatchingService()
        try await withTestServer(service: service) { server in
            for _ in 0..<20 {
                let socket = try RawSocket(connectingTo: server.socketPath)
                if sendsARequest {
                    try await socket.send(#"{"jsonrpc":"2.0","id":1,"method":"x"}"# + "\n")
                    _ = try await socket.readLine()
                }
            }
            while service.closedCount < 20 { try await Task.sleep(for: .milliseconds(10)) }
            for _ in 0..<100 where service.alive != (0, 0) { try await Task.sleep(for: .milliseconds(20)) }
            #expect(service.alive == (0, 0), "closed connections and channels still referenced")
        }
    }
}

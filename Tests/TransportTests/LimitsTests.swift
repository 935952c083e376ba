import Foundation
import JSONRPC
import NIOCore
import RPCTransport
import Synchronization
import TestSupport
import Testing

// The limits a connection is held to (docs/protocol.md, "Limits"): work in flight counted per batch
// entry, batch size, connections in all, idle and half-sent frames, credentials, and work
// cancelled with its connection. Each waits on events (replies, EOF, gates), not on time.

private func lines(_ bytes: [UInt8]) throws -> [JSONValue] {
    try bytes.split(separator: UInt8(ascii: "\n")).map { try JSONCoding.decode(JSONValue.self, from: Data($0)) }
}

@Suite(.timeLimit(.minutes(1)))
struct InFlightLimitTests {
    /// A batch's entries run at most `maxInFlightPerConnection` at a time; the batch as a whole
    /// does not count once.
    @Test func batchEntriesCountOneByOne() async throws {
        let service = TestService()
        var configuration = RPCServerConfiguration()
        configuration.maxInFlightPerConnection = 2
        try await withTestServer(service: service, configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            let batch = (1...5).map { #"{"jsonrpc":"2.0","method":"hold","id":\#($0)}"# }.joined(separator: ",")
            try await socket.send("[\(batch)]\n")
            var started = service.holdStarted.makeAsyncIterator()
            _ = await started.next()
            _ = await started.next()
            service.holdReleased.open()
            let reply = try await socket.readJSONLine()
            #expect(reply.arrayValue?.count == 5)
            #expect(service.mostRunning == 2, "at most two entries ran at once")
        }
    }

    @Test func batchOverTheLimitIsRefusedWhole() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxBatchRequests = 3
        try await withTestServer(service: TestService(), configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            let entries = (1...4).map { #"{"jsonrpc":"2.0","method":"echo","id":\#($0)}"# }.joined(separator: ",")
            try await socket.send("[\(entries)]\n")
            let reply = try await socket.readJSONLine()
            #expect(reply.errorCode == -32600)
            #expect(reply["error"]?["data"]?["maxBatchRequests"] == 3)
            try await socket.send(try requestLine("echo", id: 9, params: ["still": true]))
            #expect(try await socket.readJSONLine()["id"] == 9)
        }
    }

    /// A call answered where it is read (`ping`) overtakes calls still running on its connection.
    @Test func immediateCallsDoNotWaitForSlowOnes() async throws {
        let service = TestService()
        try await withTestServer(service: service) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(try requestLine("slow", id: 1) + requestLine("ping", id: 2))
            #expect(try await socket.readJSONLine()["result"] == "pong")
            service.slowReleased.open()
            #expect(try await socket.readJSONLine()["id"] == 1)
        }
    }
}

/// Issue 24.1: a connection's outbound budget counts the replies being built, so a client that
/// pipelines calls with large replies and reads none makes the server build only what the budget
/// (with the socket's own buffers) holds; once it reads, every call is answered.
@Suite(.timeLimit(.minutes(1)))
struct OutboundBytesTests {
    @Test func aClientThatDoesNotReadGetsNoMoreRepliesBuiltThanItsBudgetHolds() async throws {
        let service = TestService()
        var configuration = RPCServerConfiguration()
        configuration.maxOutboundBytes = 1 << 20
        configuration.maxInFlightPerConnection = 8
        try await withTestServer(service: service, configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            var frames: [UInt8] = []
            for id in 1...40 { frames += try requestLine("big", id: RequestID(Int64(id)), params: ["bytes": 262_144]) }
            try await socket.send(frames)
            // Let what can be built be built: the kernel's and NIO's buffers, then the budget.
            try await Task.sleep(for: .seconds(1))
            let builtUnread = service.built
            #expect(builtUnread < 16, "\(builtUnread) replies of 256 KiB built for a client that reads none")
            for _ in 1...40 { _ = try await socket.readJSONLine() }
            #expect(service.built == 40)
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ConnectionLimitTests {
    @Test func connectionsPastTheLimitAreRefusedWithOneLineThenEOF() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxConnections = 2
        let service = TestService()
        try await withTestServer(service: service, configuration: configuration) { server in
            let first = try RawSocket(connectingTo: server.socketPath)
            let second = try RawSocket(connectingTo: server.socketPath)
            for socket in [first, second] {
                try await socket.send(try requestLine("ping", id: 1))
                #expect(try await socket.readJSONLine()["result"] == "pong")
            }
            let third = try RawSocket(connectingTo: server.socketPath)
            let (bytes, end) = try await third.readToEnd()
            let replies = try lines(bytes)
            #expect(replies.count == 1)
            #expect(replies.first?.errorCode == -32000)
            #expect(replies.first?["id"] == .null)
            #expect(replies.first?["error"]?["data"]?["scope"] == "total")
            #expect(end == .eof)
            #expect(service.openedConnections == 2, "the service never sees a refused connection")

            // A slot frees when a connection closes.
            first.shutdownWrite()
            _ = try await first.readToEnd()
            var admitted = false
            for _ in 0..<200 where !admitted {
                let next = try RawSocket(connectingTo: server.socketPath)
                try await next.send(try requestLine("ping", id: 3))
                admitted = try await next.readJSONLine()["result"] == "pong"
            }
            #expect(admitted)
        }
    }

    /// Issue 24.4: the last connections are root's. The stand-in credentials make the first six
    /// connections uid 1001 and 1002's (three each, their share), the next uid 1003's, then root's.
    @Test func theReservedConnectionsAreLeftToRoot() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxConnections = 8
        configuration.maxConnectionsPerUID = 3
        configuration.reservedConnections = 2
        let uids: [UInt32] = [1001, 1001, 1001, 1002, 1002, 1002, 1003, 0]
        let next = Mutex(0)
        let credentials: @Sendable (Channel) -> EventLoopFuture<PeerCredentials> = { channel in
            let uid = next.withLock { n in
                defer { n += 1 }
                return uids[min(n, uids.count - 1)]
            }
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(pid: 1, uid: uid, gid: uid))
        }
        try await withTestServer(service: TestService(), configuration: configuration, credentials: credentials) {
            server in
            var held: [RawSocket] = []
            for _ in 0..<6 {
                let socket = try RawSocket(connectingTo: server.socketPath)
                try await socket.send(try requestLine("ping", id: 1))
                #expect(try await socket.readJSONLine()["result"] == "pong")
                held.append(socket)
            }
            let third = try RawSocket(connectingTo: server.socketPath)
            let (bytes, _) = try await third.readToEnd()
            let reply = try #require(try lines(bytes).first)
            #expect(reply["error"]?["data"]?["scope"] == "total" && reply["error"]?["data"]?["limit"] == 6)
            let root = try RawSocket(connectingTo: server.socketPath)
            try await root.send(try requestLine("ping", id: 2))
            #expect(try await root.readJSONLine()["result"] == "pong")
        }
    }

    @Test func connectionsPastThePerUIDLimitAreRefused() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxConnectionsPerUID = 1
        try await withTestServer(service: TestService(), configuration: configuration) { server in
            let first = try RawSocket(connectingTo: server.socketPath)
            try await first.send(try requestLine("ping", id: 1))
            #expect(try await first.readJSONLine()["result"] == "pong")
            let second = try RawSocket(connectingTo: server.socketPath)
            let (bytes, _) = try await second.readToEnd()
            let reply = try #require(try lines(bytes).first)
            #expect(reply["error"]?["data"]?["scope"] == "uid")
        }
    }

    /// Credentials that cannot be read are never guessed: the connection is closed unserved.
    @Test func connectionWithoutCredentialsIsRefused() async throws {
        let service = TestService()
        try await withTestServer(
            service: service,
            credentials: { $0.eventLoop.makeFailedFuture(PeerCredentialsUnavailable(reason: "test")) }
        ) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try? await socket.send(try requestLine("whoami", id: 1))
            let (bytes, _) = try await socket.readToEnd()
            #expect(bytes.isEmpty)
            #expect(service.openedConnections == 0)
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct TimeoutTests {
    @Test func idleConnectionIsClosedButNotOneKeptAliveOrBusy() async throws {
        var configuration = RPCServerConfiguration()
        configuration.idleTimeout = .milliseconds(200)
        let service = TestService()
        try await withTestServer(service: service, configuration: configuration) { server in
            let kept = try RawSocket(connectingTo: server.socketPath)
            try await kept.send(try requestLine("keepalive", id: 1))
            #expect(try await kept.readJSONLine()["result"] == true)
            let busy = try RawSocket(connectingTo: server.socketPath)
            try await busy.send(try requestLine("slow", id: 2))
            await service.slowStarted.wait()

            let idle = try RawSocket(connectingTo: server.socketPath)
            let (bytes, end) = try await idle.readToEnd()
            #expect(bytes.isEmpty)
            #expect(end == .eof)
            // The idle one has gone, so its elders' timers have fired too: they are still here.
            try await kept.send(try requestLine("ping", id: 3))
            #expect(try await kept.readJSONLine()["result"] == "pong")
            service.slowReleased.open()
            #expect(try await busy.readJSONLine()["result"] == "slow done")
        }
    }

    /// A slow sender (slowloris) cannot hold a half-sent frame open past the frame timeout.
    @Test func frameNotFinishedInTimeGetsAnErrorThenEOF() async throws {
        var configuration = RPCServerConfiguration()
        configuration.frameTimeout = .milliseconds(300)
        try await withTestServer(service: TestService(), configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(#"{"jsonrpc":"2.0","#)
            let (bytes, end) = try await socket.readToEnd()
            let replies = try lines(bytes)
            #expect(replies.count == 1)
            #expect(replies.first?.errorCode == -32600)
            #expect(replies.first?["error"]?["data"]?["frameTimeoutSeconds"] == 0.3)
            #expect(end == .eof)
        }
    }

    /// Whole frames sent now and then are no slow frame, however long the connection lives.
    @Test func frameTimeoutCountsFromTheFramesFirstByte() async throws {
        var configuration = RPCServerConfiguration()
        configuration.frameTimeout = .milliseconds(300)
        try await withTestServer(service: TestService(), configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            for id in 1...4 {
                try await socket.send(try requestLine("ping", id: RequestID(Int64(id))))
                #expect(try await socket.readJSONLine()["id"] == .int(Int64(id)))
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ConnectionEndTests {
    /// A client that closes its connection takes its running calls with it.
    @Test func workIsCancelledWhenThePeerCloses() async throws {
        let service = TestService()
        try await withTestServer(service: service) { server in
            do {
                let socket = try RawSocket(connectingTo: server.socketPath)
                try await socket.send(try requestLine("hang", id: 1))
                await service.hangStarted.wait()
            }  // closed here
            await service.hangCancelled.wait()
        }
    }

    /// The last request may lack its newline when the client half-closes after it.
    @Test func finalFrameWithoutNewlineIsAnswered() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            var line = try requestLine("echo", id: 1, params: ["last": true])
            line.removeLast()
            try await socket.send(line)
            socket.shutdownWrite()
            let (bytes, end) = try await socket.readToEnd()
            let replies = try lines(bytes)
            #expect(replies.map { $0["result"] } == [["last": true]])
            #expect(end == .eof)

            let junk = try RawSocket(connectingTo: server.socketPath)
            try await junk.send(#"{"jsonrpc":"2.0","#)
            junk.shutdownWrite()
            let (junkReply, _) = try await junk.readToEnd()
            #expect(try lines(junkReply).map(\.errorCode) == [-32700])
        }
    }

    @Test func idsComeBackAsTheyWereSent() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            for raw in ["12345678901234567890123", "-0", "1e2", "9223372036854775808"] {
                try await socket.send(#"{"jsonrpc":"2.0","method":"ping","id":\#(raw)}"# + "\n")
                let line = try #require(try await socket.readLine())
                #expect(String(decoding: line, as: UTF8.self) == #"{"id":\#(raw),"jsonrpc":"2.0","result":"pong"}"#)
            }
        }
    }
}

/// A peer that resets the connection while its notifications are being flushed closes the channel in
/// the middle of a write: the handler must take that as the end, not close a second time (its
/// state machine stops the process on a transition that cannot happen).
@Suite(.timeLimit(.minutes(1)))
struct ResetPeerTests {
    @Test func peersThatResetWhileTheirNotificationsFlushLeaveTheServerServing() async throws {
        try await withTestServer(service: TestService()) { server in
            for _ in 0..<50 {
                let socket = try RawSocket(connectingTo: server.socketPath)
                try await socket.send(try requestLine("push", id: 1, params: ["count": 20000]))
                // Notifications are on their way and no call runs; the socket closes with them
                // unread, so the server's next read fails with ECONNRESET while it flushes.
                _ = try await socket.readLine()
            }
            let last = try RawSocket(connectingTo: server.socketPath)
            try await last.send(try requestLine("ping", id: 2))
            #expect(try await last.readJSONLine()["result"] == "pong")
        }
    }
}

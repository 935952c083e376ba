import Foundation
import JSONRPC
import RPCTransport
import TestSupport
import Testing

// A real RPCServer on a temporary socket, driven byte by byte through raw POSIX sockets:
// framing, pipelining, batches and bad input as a careless or hostile client would send them.
// Every test waits on events (replies, EOF, gates), never on time.

@Suite(.timeLimit(.minutes(1)))
struct FramingTests {
    @Test func requestSplitByteByByteGetsOneReply() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            // Multi-byte characters split between writes must survive reassembly.
            let params: JSONValue = ["text": "é € 😀"]
            try await socket.sendInPieces(try requestLine("echo", id: 1, params: params), pieceSize: 1)
            let reply = try await socket.readJSONLine()
            #expect(reply["id"] == 1)
            #expect(reply["result"] == params)
            socket.shutdownWrite()
            let rest = try await socket.readToEnd()
            #expect(rest.bytes.isEmpty, "only one reply: \(String(decoding: rest.bytes, as: UTF8.self))")
            #expect(rest.end == .eof)
        }
    }

    @Test func requestSplitAcrossAFewWrites() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            let line = try requestLine("echo", id: "a", params: ["n": 1])
            try await socket.send(Array(line[..<5]))
            try await socket.send(Array(line[5..<(line.count - 1)]))
            try await socket.send([UInt8(ascii: "\n")])
            #expect(try await socket.readJSONLine()["id"] == "a")
        }
    }

    @Test func severalRequestsInOneWriteGetEveryReply() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            let lines = try (1...5).flatMap {
                try requestLine("echo", id: RequestID(Int64($0)), params: ["n": .int(Int64($0))])
            }
            try await socket.send(lines)
            var seen: [JSONValue: JSONValue] = [:]
            for _ in 1...5 {
                let reply = try await socket.readJSONLine()
                seen[reply["id"] ?? .null] = reply["result"]?["n"]
            }
            #expect(seen == [1: 1, 2: 2, 3: 3, 4: 4, 5: 5])
            socket.shutdownWrite()
            #expect(try await socket.readToEnd().bytes.isEmpty)
        }
    }

    /// "slow" cannot answer before the client has read "fast"'s reply and released it, so the
    /// order is forced by the protocol itself. (Letting "fast" open the gate would race: slow's
    /// reply could still be written before fast's.)
    @Test func pipelinedRequestsAreAnsweredOutOfOrder() async throws {
        let service = TestService()
        try await withTestServer(service: service) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(try requestLine("slow", id: 1) + requestLine("echo", id: 2, params: ["fast": true]))
            let first = try await socket.readJSONLine()
            #expect(first["id"] == 2, "the fast reply comes first while slow is still running")
            #expect(service.slowStarted.isOpen)
            try await socket.send(try requestLine("release", id: 3))
            let later = try await [socket.readJSONLine(), socket.readJSONLine()]
            #expect(Set(later.compactMap { $0["id"] }) == [1, 3])
            #expect(later.first { $0["id"] == 1 }?["result"] == "slow done")
        }
    }

    @Test func notificationsGetNoReply() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(
                try requestLine("echo", id: nil, params: ["quiet": true])
                    + requestLine("no.such.method", id: nil)
                    + Array(#"[{"jsonrpc":"2.0","method":"echo"},{"jsonrpc":"2.0","method":"echo"}]"#.utf8) + [0x0A]
                    + requestLine("echo", id: 9))
            socket.shutdownWrite()
            let (bytes, end) = try await socket.readToEnd()
            let lines = bytes.split(separator: UInt8(ascii: "\n"))
            #expect(
                lines.count == 1, "only the request with an id is answered: \(String(decoding: bytes, as: UTF8.self))")
            #expect(try JSONCoding.decode(JSONValue.self, from: Data(lines.first ?? []))["id"] == 9)
            #expect(end == .eof)
        }
    }

    @Test func batchGetsOneArrayReply() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(
                #"""
                [{"jsonrpc":"2.0","method":"echo","params":{"n":1},"id":1},{"jsonrpc":"2.0","method":"echo"},{"foo":"boo"},{"jsonrpc":"2.0","method":"nope","id":"x"}]

                """#)
            let reply = try await socket.readJSONLine()
            let replies = try #require(reply.arrayValue, "a batch is answered with an array: \(reply)")
            #expect(replies.count == 3)
            #expect(replies.first { $0["id"] == 1 }?["result"] == ["n": 1])
            #expect(replies.first { $0["id"] == .null }?.errorCode == -32600)
            #expect(replies.first { $0["id"] == "x" }?.errorCode == -32601)
            try await socket.send("[]\n")
            let empty = try await socket.readJSONLine()
            #expect(empty.errorCode == -32600, "an empty batch gets a single error, not an array")
        }
    }

    @Test func invalidUTF8GetsParseErrorAndConnectionStaysUsable() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send([0xFF, 0xFE, 0x7B, 0x0A])
            let error = try await socket.readJSONLine()
            #expect(error["id"] == .null)
            #expect(error.errorCode == -32700)
            try await socket.send(try requestLine("echo", id: 2, params: ["still": "here"]))
            #expect(try await socket.readJSONLine()["result"] == ["still": "here"])
        }
    }

    @Test func binaryJunkGetsParseErrorAndConnectionStaysUsable() async throws {
        try await withTestServer(service: TestService()) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            let junk = (0...255).map(UInt8.init).filter { $0 != 0x0A }
            let valid = "\u{01}\u{02}not json at all\u{7F}"
            try await socket.send(junk + [0x0A] + Array(valid.utf8) + [0x0A])
            for _ in 1...2 {
                let error = try await socket.readJSONLine()
                #expect(error["id"] == .null)
                #expect(error.errorCode == -32700)
            }
            try await socket.send(try requestLine("echo", id: 3, params: ["ok": true]))
            #expect(try await socket.readJSONLine()["id"] == 3)
        }
    }

    /// The limit counts the line without its newline: exactly `maxFrameBytes` is accepted.
    @Test func frameOfExactlyTheLimitIsAccepted() async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxFrameBytes = 1024
        try await withTestServer(service: TestService(), configuration: configuration) { server in
            let line = try paddedRequest(id: 1, lineLength: 1024)
            for pieceSize in [64, line.count] {
                let socket = try RawSocket(connectingTo: server.socketPath)
                try await socket.sendInPieces(line, pieceSize: pieceSize)
                let reply = try await socket.readJSONLine()
                #expect(reply["id"] == 1, "piece size \(pieceSize): \(reply)")
            }
        }
    }

    @Test(arguments: [64, 1, 0])  // 0: the whole frame in one write
    func oversizedFrameGetsOneErrorThenEOF(pieceSize: Int) async throws {
        var configuration = RPCServerConfiguration()
        configuration.maxFrameBytes = 1024
        try await withTestServer(service: TestService(), configuration: configuration) { server in
            let bystander = try RawSocket(connectingTo: server.socketPath)
            let socket = try RawSocket(connectingTo: server.socketPath)
            let line = try paddedRequest(id: 1, lineLength: 2000)
            // The server may stop reading as soon as the limit is passed; the rest of the frame
            // then cannot be sent, which is fine.
            try await socket.sendInPieces(line, pieceSize: pieceSize == 0 ? line.count : pieceSize)
            let (bytes, end) = try await socket.readToEnd()
            let lines = bytes.split(separator: UInt8(ascii: "\n"))
            #expect(lines.count == 1, "exactly one reply: \(String(decoding: bytes, as: UTF8.self))")
            let reply = try JSONCoding.decode(JSONValue.self, from: Data(lines.first ?? []))
            #expect(reply["id"] == .null)
            #expect(reply.errorCode == -32600)
            #expect(reply["error"]?["data"]?["maxFrameBytes"] == 1024)
            // A reset (instead of EOF) just means the server closed with our unread bytes pending.
            #expect(end == .eof || end == .reset)

            try await bystander.send(try requestLine("echo", id: 2, params: ["alive": true]))
            #expect(try await bystander.readJSONLine()["result"] == ["alive": true])
        }
    }

    /// A client that shuts its write side after its requests still gets every reply, even
    /// one that is still running when the EOF arrives; then the server closes.
    @Test func halfClosedClientStillGetsItsReplies() async throws {
        let service = TestService()
        try await withTestServer(service: service) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(try requestLine("echo", id: 1, params: ["a": 1]) + requestLine("slow", id: 2))
            socket.shutdownWrite()
            await service.slowStarted.wait()
            let releaser = try RawSocket(connectingTo: server.socketPath)
            try await releaser.send(try requestLine("release", id: 1))
            _ = try await releaser.readJSONLine()

            let (bytes, end) = try await socket.readToEnd()
            let replies = try bytes.split(separator: UInt8(ascii: "\n")).map {
                try JSONCoding.decode(JSONValue.self, from: Data($0))
            }
            #expect(Set(replies.compactMap { $0["id"] }) == [1, 2])
            #expect(end == .eof)
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ServerBehaviourTests {
    /// A client that reads nothing while the server floods it with notifications is then closed
    /// with a final notice (issue 11): the notice is not queued behind what overflowed (the queued
    /// notifications are withdrawn), nor discarded with NIO's pending writes when the connection
    /// closes; when the client reads, it gets an unbroken run of notifications, exactly up to the
    /// first one withdrawn, then the notice, then EOF.
    @Test func aClientThatNeverReadGetsTheFinalNoticeAfterWhatWasNotWithdrawn() async throws {
        let service = TestService()
        var configuration = RPCServerConfiguration()
        configuration.maxOutboundBytes = 16 << 10
        try await withTestServer(service: service, configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(try requestLine("flood", id: 1))
            await service.flooded.wait()  // the client has read nothing so far

            // Line by line: a reader slower than the writer.
            var lines: [JSONValue] = []
            while let line = try await socket.readLine() {
                lines.append(try JSONCoding.decode(JSONValue.self, from: Data(line)))
            }
            let last = try #require(lines.last)
            #expect(last["method"] == "final", "the last line is not the notice: \(last)")
            let pushed = lines.dropLast()
            #expect(pushed.allSatisfy { $0["method"] == "pushed" })
            let ns = pushed.compactMap { $0["params"]?["n"]?.intValue }
            #expect(ns == Array(0..<Int64(ns.count)), "the notifications that arrived have a gap")
            // How many went out before the withdrawal depends on when the event loop wrote them
            // (possibly none): what matters is no gap, and the notice naming the first one missing.
            #expect(last["params"]?["firstWithdrawn"]?.intValue == Int64(ns.count))
        }
    }

    /// When a connection ends, what its writer handed to the socket is still written: closing
    /// used to discard NIO's pending writes, so a client that had not kept up lost the last
    /// frames (here, up to a few hundred kilobytes and the final notice) and saw a bare EOF.
    @Test func framesHandedToTheSocketBeforeTheCloseAreNotDiscarded() async throws {
        let service = TestService()
        var configuration = RPCServerConfiguration()
        configuration.maxOutboundBytes = 256 << 10
        try await withTestServer(service: service, configuration: configuration) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(try requestLine("flood", id: 1, params: ["withdraw": false]))
            await service.flooded.wait()

            // Line by line: a reader slower than the writer, so the socket stays full to the end.
            var lines: [String] = []
            while let line = try await socket.readLine() { lines.append(String(decoding: line, as: UTF8.self)) }
            let last = try #require(lines.last)
            let final = try JSONCoding.decode(JSONValue.self, from: Data(last.utf8))
            #expect(final["method"] == "final", "the last line is not the notice: \(last)")
            // Lines are `{"jsonrpc":"2.0","method":"pushed","params":{"n":N}}`: read N without a JSON decoder.
            let ns = lines.dropLast().map { line in
                Int64(line.split(separator: ":").last?.prefix { $0.isNumber } ?? "") ?? -1
            }
            #expect(ns == Array(0..<Int64(ns.count)), "the notifications that arrived have a gap")
            #expect(final["params"]?["firstWithdrawn"]?.intValue == Int64(ns.count), "notifications were lost")
        }
    }

    @Test func pushedNotificationsReachTheClient() async throws {
        try await withTestServer(service: TestService()) { server in
            try await RPCClient.withConnection(to: server.socketPath) { client in
                let reply = try await client.call("push", params: ["count": 3])
                #expect(reply.outcome == .success(["accepted": true]))
                var received: [Request] = []
                for await notification in client.notifications {
                    received.append(notification)
                    if received.count == 3 { break }
                }
                #expect(received.map(\.method) == ["pushed", "pushed", "pushed"])
                #expect(received.map { $0.params?["n"] } == [0, 1, 2])
                #expect(received.allSatisfy { $0.isNotification })
            }
        }
    }

    @Test func peerCredentialsComeFromTheKernel() async throws {
        try await withTestServer(service: TestService()) { server in
            try await RPCClient.withConnection(to: server.socketPath) { client in
                let reply = try await client.call("whoami")
                guard case .success(let peer) = reply.outcome else {
                    Issue.record("whoami failed: \(reply)")
                    return
                }
                #expect(peer["uid"]?.intValue == Int64(getuid()))
                #expect(peer["gid"]?.intValue == Int64(getgid()))
                #expect(peer["pid"]?.intValue == Int64(getpid()))
            }
        }
    }

    @Test func clientCallsMatchRepliesByID() async throws {
        try await withTestServer(service: TestService()) { server in
            try await RPCClient.withConnection(to: server.socketPath) { client in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for n in 0..<20 {
                        group.addTask {
                            let reply = try await client.call("echo", params: ["n": .int(Int64(n))])
                            #expect(reply.outcome == .success(["n": .int(Int64(n))]))
                        }
                    }
                    try await group.waitForAll()
                }
                let unknown = try await client.call("nope")
                guard case .failure(let error) = unknown.outcome else {
                    Issue.record("expected an error: \(unknown)")
                    return
                }
                #expect(error.code == -32601)
            }
        }
    }

    @Test func clientReportsAMissingDaemon() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        await #expect(throws: RPCClientError.self) {
            try await RPCClient.withConnection(to: directory.appending("absent.sock")) { _ in }
        }
    }

    /// SIGTERM's path: with a request in flight, graceful shutdown stops accepting, lets the
    /// request finish and delivers its reply, closes the connection, and removes the socket file.
    @Test func gracefulShutdownDeliversInFlightReplies() async throws {
        let service = TestService()
        try await withTestServer(service: service) { server in
            let socket = try RawSocket(connectingTo: server.socketPath)
            try await socket.send(try requestLine("slow", id: 1))
            await service.slowStarted.wait()

            await server.triggerGracefulShutdown()
            // Shutdown has reached the request's task: only now may it finish.
            await service.shutdownSeen.wait()
            service.slowReleased.open()

            let (bytes, end) = try await socket.readToEnd()
            let lines = bytes.split(separator: UInt8(ascii: "\n"))
            #expect(lines.count == 1, "the in-flight reply, then EOF: \(String(decoding: bytes, as: UTF8.self))")
            let reply = try JSONCoding.decode(JSONValue.self, from: Data(lines.first ?? []))
            #expect(reply["id"] == 1)
            #expect(reply["result"] == "slow done")
            #expect(end == .eof)

            await server.stopped.wait()
            #expect(!fileExists(server.socketPath), "the socket file is removed when the server returns")
            #expect(throws: (any Error).self) { try RawSocket(connectingTo: server.socketPath) }
            #expect(service.openedConnections == service.closedConnections)
        }
    }
}

/// An `echo` request line of exactly `lineLength` bytes before its newline.
func paddedRequest(id: RequestID, lineLength: Int) throws -> [UInt8] {
    let bare = try requestLine("echo", id: id, params: ["pad": ""]).count - 1
    precondition(lineLength >= bare)
    let line = try requestLine(
        "echo", id: id, params: ["pad": .string(String(repeating: "x", count: lineLength - bare))])
    precondition(line.count == lineLength + 1)
    return line
}

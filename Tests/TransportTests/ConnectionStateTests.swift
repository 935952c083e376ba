import JSONRPC
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import RPCTransport

// The connection's state machine on its own, then its handler on an EmbeddedChannel, in the
// manner of SwiftNIO's HTTPServerPipelineHandlerTest: each transition's action, and a broken
// invariant closing that one connection with a log line while the process and its other
// connections go on.

@Suite struct ConnectionStateTests {
    @Test func aConnectionsLifeFromOpenToClosed() {
        var state = ConnectionState()
        #expect(state.isOpen && state.mayRead && state.mayDispatch && state.takesReplies)
        state.holdRead()
        #expect(state.readHeld)
        #expect(state.resumeRead() == .read)
        #expect(!state.readHeld)
        #expect(state.wrote() == .none)
        #expect(state.flush() == .flush)
        #expect(state.flush() == .none, "one flush per write")
        #expect(state.endReading(.peerClosed) == .none, "after EOF the frames read are still answered")
        #expect(state.mayDispatch && !state.mayRead && state.mayFinish && !state.dropsInput)
        #expect(state.endReading(.dropRest) == .dropInput, "a shutdown after EOF drops the rest")
        #expect(state.endReading(.dropRest) == .none, "dropped once")
        #expect(state.dropsInput && !state.mayDispatch && state.takesReplies)
        #expect(state.startClosing() == .closeWhenFlushed)
        #expect(state.isClosing && !state.takesReplies)
        #expect(state.endReading(.peerClosed) == .none, "a late EOF while closing is nothing")
        #expect(state.channelClosed() == .none)
        #expect(state.isClosed)
    }

    @Test func aReadHeldIsForgottenWhenReadingEnds() {
        var state = ConnectionState()
        state.holdRead()
        #expect(state.endReading(.dropRest) == .dropInput)
        #expect(!state.readHeld)
        state.holdRead()
        #expect(!state.readHeld, "none is owed after reading ended")
    }

    @Test func oneBacklogTurnAtATime() {
        var state = ConnectionState()
        #expect(state.scheduleBacklog() == .scheduleBacklog)
        #expect(state.scheduleBacklog() == .none)
        #expect(!state.mayRead, "the leftovers first")
        state.backlogRan()
        #expect(state.mayRead)
        #expect(state.scheduleBacklog() == .scheduleBacklog)
    }

    @Test func aFrameBeingPreparedHoldsBackTheNext() {
        var state = ConnectionState()
        #expect(state.startPreparing() == .none)
        #expect(!state.mayDispatch && !state.mayRead && state.busyReading)
        #expect(state.endReading(.peerClosed) == .none)
        #expect(!state.mayFinish, "the prepared frame is still to be answered")
        state.finishPreparing()
        #expect(state.mayDispatch && state.mayFinish)
    }

    @Test func theOutboxMarkIsClearedWhenDrained() {
        var state = ConnectionState()
        #expect(!state.outboxDirty)
        state.outboxWoke()
        #expect(state.outboxDirty)
        state.outboxDrained()
        #expect(!state.outboxDirty)
    }

    /// Each transition that cannot happen where it is asked for.
    static let broken: [(String, @Sendable (inout ConnectionState) -> ConnectionState.Action)] = [
        ("a read resumed that was not held", { $0.resumeRead() }),
        (
            "the peer's EOF came twice",
            { state in
                _ = state.endReading(.peerClosed)
                return state.endReading(.peerClosed)
            }
        ),
        (
            "leftover frames scheduled where no frame is handled",
            { state in
                _ = state.endReading(.dropRest)
                return state.scheduleBacklog()
            }
        ),
        (
            "a frame prepared where no frame is handled",
            { state in
                _ = state.startPreparing()
                return state.startPreparing()
            }
        ),
        (
            "a write after the connection began to close",
            { state in
                _ = state.startClosing()
                return state.wrote()
            }
        ),
        (
            "closing began twice, or after the channel closed",
            { state in
                _ = state.startClosing()
                return state.startClosing()
            }
        ),
    ]

    @Test(arguments: 0..<Self.broken.count)
    func aBrokenInvariantAsksToCloseThisConnection(_ index: Int) {
        let (reason, transition) = Self.broken[index]
        var state = ConnectionState()
        #expect(transition(&state) == .forceClose(reason))
        #expect(state.isClosing, "nothing more is read or written on it")
        #expect(!state.takesReplies && !state.mayRead && !state.mayDispatch && state.dropsInput)
        #expect(state.channelClosed() == .none)
    }

    @Test func closedStaysClosed() {
        var state = ConnectionState()
        #expect(state.channelClosed() == .none)
        #expect(state.endReading(.peerClosed) == .forceClose("reading ended on a closed connection"))
        #expect(state.channelClosed() == .forceClose("the channel closed twice"))
        #expect(state.isClosed)
    }
}

@Suite struct ConnectionHandlerTests {
    /// A handler on an EmbeddedChannel, logging into `lines`.
    struct Harness {
        let channel = EmbeddedChannel()
        let handler: ConnectionHandler
        let lines: LogLines

        init() throws {
            lines = LogLines()
            let lines = lines
            var configuration = RPCServerConfiguration()
            configuration.idleTimeout = nil
            let logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
            let connection = RPCConnection(
                id: 1, peer: PeerCredentials(pid: 1, uid: 1000, gid: 1000), outboxLimit: 1 << 20, channel: channel)
            handler = ConnectionHandler(
                connection: connection, service: TestService(), configuration: configuration,
                census: ConnectionCensus(configuration: configuration, logger: logger), logger: logger)
            try channel.pipeline.syncOperations.addHandler(handler)
            // Active, as an accepted connection is (channelActive runs).
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        func send(_ text: String) throws { try channel.writeInbound(ByteBuffer(string: text + "\n")) }

        func readReply() throws -> String? { try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } }
    }

    @Test func aCallAnsweredWhereItIsReadIsWrittenAndFlushed() throws {
        let harness = try Harness()
        try harness.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        #expect(try harness.readReply() == #"{"id":1,"jsonrpc":"2.0","result":"pong"}"# + "\n")
        #expect(harness.channel.isActive)
        #expect(try harness.channel.finish().isClean)
    }

    @Test func theEndOfInputWithNothingInFlightClosesAfterTheLastReply() throws {
        let harness = try Harness()
        try harness.send(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        harness.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try harness.readReply()?.contains("pong") == true)
        #expect(!harness.channel.isActive)
        #expect(harness.handler.state.isClosed)
        #expect(harness.lines.errors.isEmpty)
    }

    /// The peer's EOF told twice, while a call is in flight (the connection is answering after
    /// reading ended), cannot happen: that connection is closed with a log line at error, and
    /// another connection goes on.
    @Test func aBrokenInvariantClosesThatConnectionOnly() throws {
        let broken = try Harness()
        let other = try Harness()
        try broken.send(#"{"jsonrpc":"2.0","id":1,"method":"hold"}"#)
        #expect(broken.handler.inFlight == 1)
        broken.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(broken.channel.isActive, "still answering the call in flight")
        broken.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(!broken.channel.isActive)
        #expect(broken.handler.state.isClosed)
        #expect(broken.lines.errors == ["connection state broken: the peer's EOF came twice; closing this connection"])
        try other.send(#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
        #expect(try other.readReply()?.contains("pong") == true)
        #expect(other.channel.isActive)
    }
}

final class LogLines: Sendable {
    private let lines = Mutex<[(Logger.Level, String)]>([])
    func append(_ level: Logger.Level, _ line: String) { lines.withLock { $0.append((level, line)) } }
    var errors: [String] { lines.withLock { $0.filter { $0.0 >= .error }.map(\.1) } }
}

struct CapturingLogHandler: LogHandler {
    let lines: LogLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { lines.append(event.level, event.message.description) }
}

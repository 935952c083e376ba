import JSONRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The server's count of open connections, in all and per uid: admits a new one or says why
/// not. The last `reservedConnections` are for the privileged uids (root, the daemon's own), so
/// other users holding every connection they may (idle subscribers included, which no idle
/// timeout closes) never lock those out. Refusals are logged at most once per `logEvery`, with
/// how many were refused meanwhile, so a flood of connections cannot flood the journal too.
final class ConnectionCensus: Sendable {
    struct Refusal {
        var reason: String
        var reply: [UInt8]
    }

    private struct State {
        var total = 0
        var byUID: [UInt32: Int] = [:]
        var nextID: UInt64 = 1
        var closedSinceTrim = 0
        var refusedUnlogged = 0
        var lastRefusalLog: NIODeadline?
    }

    private let state = Mutex(State())
    private let bytesSinceTrim = Atomic<Int>(0)
    private let configuration: RPCServerConfiguration
    private let logger: Logger
    static let logEvery = TimeAmount.seconds(10)

    init(configuration: RPCServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func nextID() -> UInt64 {
        state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
    }

    /// Counts `channel` in (and out again when it closes), or returns why it may not stay.
    func admit(_ channel: Channel, uid: UInt32) -> Refusal? {
        let now = NIODeadline.now()
        let (refusal, log): (Refusal?, String?) = state.withLock { s in
            let refusal: Refusal?
            let privileged = configuration.privilegedUIDs.contains(uid)
            let reserved = min(configuration.reservedConnections, configuration.maxConnections / 2)
            let open = configuration.maxConnections - (privileged ? 0 : reserved)
            if s.total >= open {
                refusal = Self.refusal(
                    "\(s.total) connections are open, the most allowed"
                        + (privileged ? "" : " to uid \(uid) (the last \(reserved) are root's)")
                        + " (STPD_MAX_CONNECTIONS, STPD_RESERVED_CONNECTIONS)", scope: "total", limit: open)
            } else if s.byUID[uid, default: 0] >= configuration.maxConnectionsPerUID {
                refusal = Self.refusal(
                    "uid \(uid) has \(s.byUID[uid, default: 0]) connections open, the most allowed per uid "
                        + "(STPD_MAX_CONNECTIONS_PER_UID)", scope: "uid", limit: configuration.maxConnectionsPerUID)
            } else {
                s.total += 1
                s.byUID[uid, default: 0] += 1
                return (nil, nil)
            }
            s.refusedUnlogged += 1
            if let last = s.lastRefusalLog, now - last < Self.logEvery { return (refusal, nil) }
            let more = s.refusedUnlogged > 1 ? " (\(s.refusedUnlogged - 1) more refused since the last report)" : ""
            s.refusedUnlogged = 0
            s.lastRefusalLog = now
            return (refusal, "refusing a connection: " + (refusal?.reason ?? "") + more)
        }
        if let log { logger.warning("\(log)") }
        if refusal == nil {
            channel.closeFuture.whenComplete { _ in self.release(uid) }
        }
        return refusal
    }

    private func release(_ uid: UInt32) {
        state.withLock { s in
            s.total -= 1
            s.closedSinceTrim += 1
            let left = s.byUID[uid, default: 1] - 1
            s.byUID[uid] = left > 0 ? left : nil
        }
    }

    private static func refusal(_ reason: String, scope: String, limit: Int) -> Refusal {
        let error = RPCError(
            code: RPCError.serverBusyCode, message: "Server error: too many connections; try again later",
            data: ["scope": .string(scope), "limit": .int(Int64(limit))])
        return Refusal(reason: reason, reply: Framing.bytes(Response(id: .null, error: error)))
    }

    /// Bytes read, so memory is handed back after bursts of traffic.
    func didRead(_ count: Int) { bytesSinceTrim.add(count, ordering: .relaxed) }

    /// glibc keeps freed memory in its arenas; after a burst (connections closed, megabytes
    /// read) it is returned to the system every few seconds with malloc_trim.
    func trimMemoryAfterBursts(every interval: Duration = .seconds(5)) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            let closed = state.withLock { s in
                defer { s.closedSinceTrim = 0 }
                return s.closedSinceTrim
            }
            let bytes = bytesSinceTrim.exchange(0, ordering: .relaxed)
            if closed > 0 || bytes > 1 << 20 {
                #if canImport(Glibc)
                    _ = glibcMallocTrim(0)
                #endif
            }
        }
    }
}

#if canImport(Glibc)
    /// glibc's malloc_trim (malloc.h is not part of the Glibc module).
    @_silgen_name("malloc_trim")
    private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

extension RPCError {
    /// Implementation-defined server error: the daemon refuses new work (too many connections).
    public static let serverBusyCode = -32000
}

/// Stands in for the connection handler on a refused connection: writes the refusal (if any),
/// ends the output so the peer reads EOF, then closes once the peer does or after a second.
final class RefusingHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let reply: [UInt8]?

    init(reply: [UInt8]?) { self.reply = reply }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        let closeAnyway = channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in closeAnyway.cancel() }
        guard let reply else {
            context.close(promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: reply))).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
}

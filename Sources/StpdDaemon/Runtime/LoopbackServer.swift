import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import StpdCore
import StpdProtocol
import Synchronization

/// The loopback return's listener (`LoopbackReturn`): a small HTTP/1.1 server on 127.0.0.1 that
/// answers only `GET /return/TOKEN…`, up only while a loopback session waits on it.
///
/// Built on NIOHTTP1 rather than Hummingbird (which stripe-test-server uses): stpd already links
/// SwiftNIO's HTTP/1 codec through its HTTP client, so this adds no code to the binary, whereas
/// Hummingbird would add its router, HTTPTypes and its server core for one route; and NIOHTTP1
/// exposes every limit this listener needs where Hummingbird hides them: the decoder's bytes per
/// header line and in all (the request line counts), header count, the pipeline's one request at
/// a time, and a channel we can bind and close on demand rather than an application that runs for
/// the process's life. Its bounds, each like the Unix socket's:
/// - connections: `maxConnections` at once, one more is closed unanswered; one request each
///   (`Connection: close`), so a connection holds at most one completion and one page;
/// - bytes: the request line and headers `maxHeadBytes` in all (one header line as much, 64
///   lines), else 400 and close; a request announcing a body is refused (404) unread;
/// - time: the head must arrive within `headTimeout` of the connect, however it trickles (a slow
///   client is closed), and the page is answered within `pageWait` plus the store's time.
///
/// Listening: `openPort` binds (an ephemeral port unless `STPD_LOOPBACK_PORT` pins one) and the
/// listener holds off idle exit while up; `run` closes it once no session has waited for
/// `grace` (a reload of the page still gets its answer meanwhile). A restarted stpd listens at
/// once on every port its waiting sessions' return URLs name, since their customers' browsers
/// will come back there; a port another process took meanwhile is logged, and those sessions
/// complete only through `handle-url`, `redirect.report` or `redirect.cancel`.
actor LoopbackServer: LoopbackListener, Service {
    struct Configuration: Sendable {
        var pinnedPort: Int?
        var grace: Duration = .seconds(30)
        var maxConnections = 64
        var maxHeadBytes = 8192
        var headTimeout: TimeAmount = .seconds(10)
        var pageWait: Duration = .seconds(20)

        init() {}

        /// The head has the Unix socket's frame time (`STPD_FRAME_TIMEOUT`) to arrive.
        init(_ daemon: DaemonConfiguration) {
            pinnedPort = daemon.loopbackPort
            grace = daemon.loopbackGrace
            maxConnections = daemon.loopbackMaxConnections
            headTimeout = TimeAmount(daemon.frameTimeout)
        }
    }

    private enum State {
        case closed
        case opening(Task<Int, any Error>)
        case open(Listening)
    }

    private struct Listening {
        var channels: [Int: any Channel]
        /// The port new loopback returns name.
        var primary: Int
        /// Since when no session waits (nil while one does).
        var quietSince: ContinuousClock.Instant?
    }

    private let configuration: Configuration
    /// The sessions it completes; set once they exist (they need the listener for its port).
    private let late = LateBound<RedirectSessions>()
    let instance: String
    private let activity: Activity
    private let logger: Logger
    private let connections: LoopbackConnections
    private var state = State.closed
    /// Sessions waiting on this listener at the last look (daemon.status).
    private(set) var waiting = 0

    init(configuration: Configuration, instance: String, activity: Activity, logger: Logger) {
        self.configuration = configuration
        self.instance = instance
        self.activity = activity
        self.logger = logger
        connections = LoopbackConnections(limit: configuration.maxConnections)
    }

    nonisolated func attach(_ redirects: RedirectSessions) { late.set(redirects) }
    private func redirects() -> RedirectSessions? { late.get() }

    /// The port loopback returns name, when listening.
    var port: Int? {
        if case .open(let listening) = state { return listening.primary }
        return nil
    }

    func openPort() async throws -> Int {
        switch state {
        case .open(var listening):
            listening.quietSince = nil
            state = .open(listening)
            return listening.primary
        case .opening(let task):
            return try await task.value
        case .closed:
            let wanted = configuration.pinnedPort ?? 0
            // Calls arriving meanwhile wait for this bind rather than binding again.
            let task = Task { () throws -> Int in
                do {
                    let channel = try await self.bind(wanted)
                    let port = channel.localAddress?.port ?? 0
                    self.opened([port: channel], primary: port)
                    return port
                } catch {
                    self.state = .closed
                    throw DomainError.disabled(
                        setting: "STPD_LOOPBACK_PORT",
                        detail: "cannot listen on 127.0.0.1:\(wanted) for a loopback return: \(error)")
                }
            }
            state = .opening(task)
            return try await task.value
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.restore()
            while (try? await Task.sleep(for: .seconds(1))) != nil { await self.look() }
        }
        await close()
    }

    /// After a restart: listens on the ports that waiting sessions name (retrying while the store
    /// does not answer, as a fleet's database may not yet).
    private func restore() async {
        while !Task.isCancelled {
            guard let redirects = redirects() else { return }
            do {
                let ports = try await redirects.loopbackPorts(instance: instance)
                guard !ports.isEmpty, case .closed = state else { return }
                var channels: [Int: any Channel] = [:]
                for port in ports.sorted() {
                    do {
                        channels[port] = try await bind(port)
                    } catch {
                        logger.error(
                            "cannot listen again on 127.0.0.1:\(port), where loopback sessions wait: \(error); they complete only through handle-url, redirect.report or redirect.cancel"
                        )
                    }
                }
                let primary = configuration.pinnedPort.flatMap { channels[$0] == nil ? nil : $0 } ?? channels.keys.min()
                if let primary {
                    opened(channels, primary: primary)
                    logger.info("listening again on 127.0.0.1 \(channels.keys.sorted()) for waiting loopback sessions")
                }
                return
            } catch {
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }

    /// Closes once nothing has waited for the grace.
    private func look() async {
        guard case .open = state, let redirects = redirects() else { return }
        let count = (try? await redirects.loopbackWaiting(instance: instance)) ?? 1
        waiting = count
        let unclaimed = redirects.loopback?.unclaimed ?? 0
        guard case .open(var listening) = state else { return }
        if count + unclaimed > 0 {
            listening.quietSince = nil
        } else if let since = listening.quietSince {
            if ContinuousClock.now - since >= configuration.grace { return await close() }
        } else {
            listening.quietSince = .now
        }
        state = .open(listening)
    }

    private func opened(_ channels: [Int: any Channel], primary: Int) {
        state = .open(Listening(channels: channels, primary: primary, quietSince: nil))
        activity.hold()
        logger.info("loopback return listening on 127.0.0.1:\(primary)")
    }

    private func close() async {
        guard case .open(let listening) = state else { return }
        state = .closed
        waiting = 0
        for channel in listening.channels.values { try? await channel.close() }
        activity.release()
        logger.info("loopback return closed: no session waits on it")
    }

    private func bind(_ port: Int) async throws -> any Channel {
        let late = late
        let settings = LoopbackHandler.Settings(
            pageWait: configuration.pageWait, headTimeout: configuration.headTimeout, logger: logger,
            redirects: { late.get() })
        let connections = connections
        let limits = {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderListSize = configuration.maxHeadBytes
            limits.maxHeaderFieldSize = configuration.maxHeadBytes
            limits.maxHeaderFieldCount = 64
            return limits
        }()
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard connections.take() else {
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in connections.give() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withPipeliningAssistance: true, withErrorHandling: true,
                        withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
                    try channel.pipeline.syncOperations.addHandler(LoopbackHandler(settings))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
    }
}

/// Connections open at once, against the cap.
final class LoopbackConnections: Sendable {
    private let limit: Int
    private let count = Mutex(0)

    init(limit: Int) { self.limit = limit }

    func take() -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func give() { count.withLock { $0 -= 1 } }
}

/// A value set once after creation, for two parts that each need the other.
final class LateBound<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    func set(_ new: Value) { value.withLock { $0 = new } }
    func get() -> Value? { value.withLock { $0 } }
}

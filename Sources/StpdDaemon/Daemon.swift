import Foundation
import JSONRPC
import Logging
import RPCTransport
import ServiceLifecycle
import StpdProtocol

/// Starts stpd: takes or binds the socket, serves until SIGTERM/SIGINT, then drains and exits.
public enum Daemon {
    public static func run(_ configuration: DaemonConfiguration) async throws {
        let logger = makeLogger(level: configuration.logLevel)
        try prepareStateDirectory(configuration.stateDirectory)
        let listener = try Listener.acquire(configuration)

        let facts = ProcessFacts(
            activation: listener.activation, socketPath: listener.socket.path, stateDirectory: configuration.stateDirectory)
        let connections = ConnectionCount()
        var router = MethodRouter<CallContext>(definitions: StpdAPI.schemas.mapValues(\.json))
        DaemonHandlers.register(into: &router, facts: facts, openConnections: { connections.current })
        let service = StpdService(router: router, logger: logger, connections: connections)

        var serverConfiguration = RPCServerConfiguration()
        serverConfiguration.maxFrameBytes = configuration.maxFrameBytes
        serverConfiguration.maxOutboundBytes = configuration.maxOutboundBytes
        let server = RPCServer(socket: listener.socket, configuration: serverConfiguration, service: service, logger: logger) {
            Systemd.notify("READY=1\nSTATUS=Serving on \(listener.socket.path)")
            logger.notice("stpd \(StpdAPI.version) ready", metadata: [
                "socket": "\(listener.socket.path)", "activation": "\(listener.activation.rawValue)",
            ])
        }

        var groupConfiguration = ServiceGroupConfiguration(
            // Shutdown runs in reverse order: systemd hears STOPPING=1 first, then the server drains.
            services: [.init(service: server), .init(service: SystemdWatchdog(logger: logger))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownGracePeriod
        try await ServiceGroup(configuration: groupConfiguration).run()
        logger.info("stopped")
    }

    static func makeLogger(level: Logger.Level) -> Logger {
        let toJournal = Systemd.stderrIsJournal()
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler = toJournal
                ? JournalLogHandler(logLevel: level, label: label)
                : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "stpd")
    }

    /// The state folder is private to the daemon's user (0700), created if missing.
    static func prepareStateDirectory(_ path: String) throws {
        let manager = FileManager.default
        if !manager.fileExists(atPath: path) {
            try manager.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } else {
            try manager.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        }
    }
}

/// Pings systemd's watchdog at half its interval while the daemon runs, and tells systemd when
/// shutdown begins (`STOPPING=1`) so new connections queue for the next start.
struct SystemdWatchdog: Service {
    let logger: Logger

    func run() async throws {
        let interval = Systemd.watchdogPingInterval()
        if let interval { logger.info("watchdog enabled", metadata: ["ping_interval": "\(interval)"]) }
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    if interval != nil { Systemd.notify("WATCHDOG=1") }
                    do { try await Task.sleep(for: interval ?? .seconds(3600)) } catch { break }
                }
            }
        } onGracefulShutdown: {
            Systemd.notify("STOPPING=1\nSTATUS=Shutting down")
        }
    }
}

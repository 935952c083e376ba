import Foundation
import JSONRPC
import RPCTransport
import StpdCore
import StpdProtocol

/// What a handler knows about the call it answers: the connection, and who is calling (from the
/// kernel's peer credentials, built once per call; ownership checks use nothing else).
public struct CallContext: Sendable {
    public var connection: RPCConnection
    public var caller: Caller

    init(connection: RPCConnection) {
        self.connection = connection
        // The transport refuses connections whose credentials it cannot read; nobody's uid otherwise.
        caller = connection.peer.map { Caller(uid: $0.uid, pid: $0.pid) } ?? Caller(uid: .max)
    }
}

/// Facts about this process that `daemon.status` reports.
struct ProcessFacts: Sendable {
    var startedAt = Date()
    var startedClock = ContinuousClock.now
    var activation: DaemonStatus.Activation
    var socketPath: String
    var stateDirectory: String
}

enum DaemonHandlers {
    static func register(into router: inout MethodRouter<CallContext>, facts: ProcessFacts, parts: Daemon.Parts) {
        let contract = Contract.document
        router.register(Discover.self) { _, _ in contract }
        router.register(Ping.self) { _, _ in Ping.Result(version: StpdAPI.version) }
        router.register(DaemonStatusMethod.self) { _, _ in
            let uptime = ContinuousClock.now - facts.startedClock
            let bounds = try await parts.store.eventBounds()
            return DaemonStatus(
                version: StpdAPI.version,
                pid: getpid(),
                startedAt: facts.startedAt.formatted(.iso8601),
                uptimeSeconds: uptime.seconds,
                activation: facts.activation,
                socketPath: facts.socketPath,
                stateDirectory: facts.stateDirectory,
                connections: parts.activity.connections,
                subscriptions: parts.subscriptions.count,
                store: .init(
                    path: parts.store.path, sizeBytes: parts.store.sizeOnDisk, latestSeq: bounds.latestSeq,
                    oldestSeq: bounds.oldestKept, setAside: try await parts.store.setAsideCount()))
        }
    }
}

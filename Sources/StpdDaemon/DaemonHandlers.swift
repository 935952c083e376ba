import Foundation
import JSONRPC
import RPCTransport
import StpdCore
import StpdProtocol

/// What a handler knows about the call it answers.
public struct CallContext: Sendable {
    public var connection: RPCConnection
    public var peer: PeerCredentials { connection.peer }
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
        // Both answers are encoded once: the contract is large (its reply is written by a task),
        // the ping is answered where its line is read.
        try! router.registerConstant(Discover.self, result: contract, immediate: false)
        try! router.registerConstant(Ping.self, result: Ping.Result(version: StpdAPI.version))
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
                    oldestSeq: bounds.oldestKept))
        }
    }
}

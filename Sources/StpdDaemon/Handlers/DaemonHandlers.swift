import Foundation
import JSONRPC
import RPCTransport
import StpdCore
import StpdProtocol

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
        router.register(DaemonMetrics.self) { _, _ in
            // Answered while a fleet's database is down too: its figures are then left out.
            let redirects = try? await parts.store.store.statusCounts(kind: .redirect)
            let fleet = await parts.store.fleet?.status(log: parts.log)
            let snapshot = StpdMetrics.Snapshot(
                connections: parts.activity.connections, subscribers: parts.subscriptions.count,
                pollsRunning: parts.sources.pollsRunning + parts.intents.pollsRunning,
                storeSizeBytes: parts.store.sizeOnDisk(),
                redirectSessions: redirects.map { counts in
                    Dictionary(uniqueKeysWithValues: RedirectStatus.allCases.map { ($0, counts[$0.rawValue] ?? 0) })
                }, fleet: fleet, commits: parts.store.fleet?.commits)
            return DaemonMetrics.Result(text: parts.metrics.text(snapshot), contentType: StpdMetrics.contentType)
        }
        router.register(DaemonStatusMethod.self) { _, _ in
            let uptime = ContinuousClock.now - facts.startedClock
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
                store: try await parts.store.status(), fleet: await parts.store.fleet?.status(log: parts.log),
                loopback: await loopbackStatus(parts))
        }
    }

    /// Answered while a fleet's database is down too: the waiting sessions are then as last counted.
    private static func loopbackStatus(_ parts: Daemon.Parts) async -> DaemonStatus.LoopbackStatus? {
        guard let server = parts.loopback else { return nil }
        let port = await server.port
        let lastCounted = await server.waiting
        let counted = try? await parts.redirects.loopbackWaiting(instance: server.instance)
        return .init(listening: port != nil, port: port, waiting: counted ?? lastCounted)
    }
}

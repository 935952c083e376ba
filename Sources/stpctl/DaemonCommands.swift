import ArgumentParser
import JSONRPC
import StpctlKit
import StpdProtocol

// The `daemon` namespace and rpc.discover. Abstracts come from the method declarations.

struct PingCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping", abstract: "\(Ping.summary) On a terminal, prints the round-trip time.")

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let output = global.output
        let connection = try global.connection()
        let (pong, roundTrip) = try await connection.run { client in
            let clock = ContinuousClock()
            let start = clock.now
            let pong = try await client.call(Ping.self, NoParams())
            return (pong, start.duration(to: clock.now))
        }
        output.result(pong) {
            "pong from stpd \($0.version) at \(connection.socketPath) in \(Render.milliseconds(roundTrip))"
        }
    }
}

struct StatusCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: DaemonStatusMethod.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let output = global.output
        let status = try await global.connection().run { try await $0.call(DaemonStatusMethod.self, NoParams()) }
        output.result(status) { Render.table(Self.rows($0)) }
    }

    static func rows(_ s: DaemonStatus) -> [(String, String)] {
        let activation = s.activation == .socket ? "socket (systemd)" : "bound by stpd"
        let events = s.store.latestSeq == 0 ? "none yet" : "seq \(s.store.oldestSeq) to \(s.store.latestSeq)"
        return [
            ("version", s.version),
            ("pid", String(s.pid)),
            ("started", s.startedAt),
            ("uptime", Render.duration(s.uptimeSeconds)),
            ("activation", activation),
            ("socket", s.socketPath),
            ("state directory", s.stateDirectory),
            ("connections", String(s.connections)),
            ("subscriptions", String(s.subscriptions)),
            ("store", "\(s.store.path) (\(s.store.sizeBytes) bytes)"),
            ("events", events),
        ]
    }
}

struct DiscoverCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "List the daemon's methods; with --json, print its OpenRPC document.",
        discussion: Discover.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let output = global.output
        let document = try await global.connection().run { try await $0.call(Discover.self, NoParams()) }
        output.result(document) { Render.methods(of: $0) }
    }
}

struct DescribeCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Print a method's summary, params, result and errors, from rpc.discover.",
        discussion: """
            Without a method, lists the methods by kind with their summaries. With --json, prints \
            the method's entry of the OpenRPC document (without a method, its kinds and their methods).
            """)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    @Argument(help: ArgumentHelp("The method, as `stpctl discover` lists it.", valueName: "method"))
    var method: String?

    func run() async throws {
        let output = global.output
        let document = try await global.connection().run { try await $0.call(Discover.self, NoParams()) }
        guard let method else {
            let kinds = DescribeRender.kinds(in: document).map { kind in
                MethodKind(kind: kind.kind, methods: kind.methods.map { .init(name: $0.name, summary: $0.summary) })
            }
            return output.result(kinds) { _ in DescribeRender.overview(of: document) }
        }
        let text = try DescribeRender.describe(method, in: document)
        let entry = document["methods"]?.arrayValue?.first { $0["name"]?.stringValue == method } ?? .null
        output.result(entry) { _ in text }
    }

    /// One kind of `describe`'s JSON without a method.
    struct MethodKind: Encodable {
        struct Method: Encodable {
            var name: String
            var summary: String
        }
        var kind: String
        var methods: [Method]
    }
}

struct MetricsCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics", abstract: DaemonMetrics.summary,
        discussion: """
            Prints the text as the daemon sends it (Prometheus text format), JSON or not, so that \
            `stpctl metrics > file` feeds node_exporter's textfile collector (docs/metrics-and-logs.md).
            """)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let metrics = try await global.connection().run { try await $0.call(DaemonMetrics.self, NoParams()) }
        Output.write(metrics.text.hasSuffix("\n") ? String(metrics.text.dropLast()) : metrics.text, to: .standardOutput)
    }
}

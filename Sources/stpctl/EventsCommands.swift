import ArgumentParser
import Foundation
import JSONRPC
import StpctlKit
import StpdProtocol

/// The `events` namespace: reading the event log without holding a subscription.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Read the event log (stpctl watch streams it).",
        subcommands: [EventsWaitCommand.self])
}

struct EventsWaitCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: EventsWait.summary,
        discussion: """
            Prints the matching events after --since (waiting up to --timeout-seconds for the first \
            one), then `next`: pass it as --since to the next call. On a terminal one line per event \
            then "next: N"; otherwise one JSON object {"events": [...], "next": N}.

            The global --timeout counts on top of the wait, so it never cuts the wait short.

            Example:
              next=0; while :; do out=$(stpctl events wait --since "$next"); next=$(jq .next <<<"$out"); done
            """)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    @Option(help: ArgumentHelp("Return events after this seq (0: from the oldest kept).", valueName: "seq"))
    var since: Int64

    @Option(
        name: .customLong("timeout-seconds"),
        help: ArgumentHelp(
            "Seconds the daemon waits when nothing matches yet, 0 to 300 (default \(Int(LongPoll.daemonDefaultWait))).",
            valueName: "seconds"))
    var timeoutSeconds: Double?

    @Option(help: ArgumentHelp("Most events returned, 1 to 1000 (default 100).", valueName: "n"))
    var limit: Int?

    @OptionGroup(title: "Filter") var filter: EventFilterOptions

    func validate() throws {
        guard since >= 0 else { throw ValidationError("--since must be 0 or more") }
        if let timeoutSeconds, !(timeoutSeconds.isFinite && (0...300).contains(timeoutSeconds)) {
            throw ValidationError("--timeout-seconds must be from 0 to 300")
        }
        if let limit, !(1...1000).contains(limit) { throw ValidationError("--limit must be from 1 to 1000") }
    }

    func run() async throws {
        let output = global.output
        let base = try global.connection()
        let connection = Connection(
            socketPath: base.socketPath,
            timeoutSeconds: LongPoll.clientTimeout(global: global.callTimeout, wait: timeoutSeconds))
        let params = EventsWait.Params(
            since: since, filter: filter.params, timeout: timeoutSeconds, limit: limit)
        let result = try await connection.run { try await $0.call(EventsWait.self, params) }
        output.result(result) { result in
            let events = result.events.compactMap { try? JSONCoding.value(of: $0) }.map { EventRender.humanLine($0) }
            return (events.isEmpty ? ["no events after seq \(since)"] : events).joined(separator: "\n")
                + "\nnext: \(result.next)"
        }
    }
}

import ArgumentParser
import Foundation
import JSONRPC
import RPCTransport
import StpctlKit
import StpdProtocol
import StripeAPI

/// The `source` namespace: Sources (`source.*`) and their status polls.
struct SourceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "source",
        abstract: "Sources: create them with the SDK's typed constructors, poll them, wait for them.",
        discussion: """
            Sources are remembered by stpd for your uid (root sees everyone's). On a terminal a \
            Source prints as key: value lines; otherwise, or with --json, the reply's JSON.

            Examples:
              stpctl source create sofort --amount 1099 --country DE --return-url app://x
              stpctl source create ideal --amount 1099 --return-url app://x --bank ing
              stpctl source create --raw - < stripe-source-params.json
              stpctl source poll src_123 --wait
              stpctl source wait src_123 --timeout 120
            """,
        subcommands: [
            SourceCreateCommand.self, ObjectShowCommand<SourceListing>.self, ObjectListCommand<SourceListing>.self,
            SourceRetrieveCommand.self,
            SourcePollCommand.self, SourceStopCommand.self, SourceWaitCommand.self,
        ])
}

extension Output {
    /// A Source record: `key: value` lines for people, its JSON otherwise.
    func source(_ view: JSONValue, clientSecret: String? = nil, showSecret: Bool = false) {
        result(view) { SourceRender.source($0, clientSecret: clientSecret, showSecret: showSecret) }
    }
}

/// JSON of a reply, for the renderers (which work on JSON so they are tested without a daemon).
func asJSON(_ value: some Encodable) -> JSONValue { (try? JSONCoding.value(of: value)) ?? .null }

// MARK: the other source.* methods

/// The `ID` argument of the commands after `create`. Its form is the daemon's to check.
struct SourceIDArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The Source id (src_...).", valueName: "id"))
    var id: String
}

struct SourceRetrieveCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "retrieve", abstract: SourceRetrieve.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SourceIDArgument
    @Option(help: ArgumentHelp("The Source's client secret.", valueName: "secret")) var clientSecret: String

    func run() async throws {
        let output = global.output
        let params = SourceRetrieve.Params(id: target.id, clientSecret: clientSecret)
        let result = try await global.connection().run { try await $0.call(SourceRetrieve.self, params) }
        output.result(result) {
            SourceRender.source(asJSON($0.source), clientSecret: $0.clientSecret, showSecret: output.showSecrets)
        }
    }
}

struct SourcePollCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "poll",
        abstract: "Starts polling a Source's status with the SDK's schedule (replacing a poll already running).",
        discussion: """
            Prints the Source with its poll. With --wait, waits for the poll to end as \
            stpctl source wait does, and exits as it does.

            \(SourcePoll.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SourceIDArgument
    @Option(
        help: ArgumentHelp(
            "The Source's client secret; not needed when it was created or retrieved through stpd.", valueName: "secret"
        ))
    var clientSecret: String?
    @Option(help: ArgumentHelp("Seconds the poll runs, at most 300 (the default).", valueName: "seconds"))
    var pollTimeout: Double?
    @Flag(help: "Wait for the poll to end, then print the Source (see stpctl source wait).")
    var wait = false

    func validate() throws {
        if let pollTimeout, !(pollTimeout.isFinite && pollTimeout >= 0) {
            throw ValidationError("--poll-timeout must be 0 or more seconds")
        }
    }

    func run() async throws {
        let params = SourcePoll.Params(id: target.id, clientSecret: clientSecret, timeout: pollTimeout)
        guard wait else {
            let output = global.output
            output.source(asJSON(try await global.connection().run { try await $0.call(SourcePoll.self, params) }))
            return
        }
        try await SourceWaitCommand.wait(for: target.id, global) { asJSON(try await $0.call(SourcePoll.self, params)) }
    }
}

struct SourceStopCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: SourceStopPolling.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SourceIDArgument

    func run() async throws {
        let output = global.output
        let params = SourceIDParams(id: target.id)
        output.source(asJSON(try await global.connection().run { try await $0.call(SourceStopPolling.self, params) }))
    }
}

struct SourceWaitCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Waits until a Source's poll ends, then prints the Source.",
        discussion: """
            Follows the Source's events (source.*). On a terminal a progress line shows its status, \
            failed requests and the time left to the poll's deadline.

            Exit status: 0 when the poll finished without an error (whatever the Source's status: \
            read it from the output); 1 when it finished with an error (printed on stderr), was \
            stopped, or there is no poll; 4 when --timeout passes first (the poll goes on). Without \
            --timeout the wait lasts as long as the poll (at most 300 s and one interval).
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SourceIDArgument

    func run() async throws {
        let params = SourceIDParams(id: target.id)
        try await Self.wait(for: target.id, global) { asJSON(try await $0.call(SourceGet.self, params)) }
    }

    /// Waits with `fetch` as the first read (source.get, or source.poll for `poll --wait`), prints
    /// the final record, then throws unless the poll finished without an error.
    static func wait(
        for id: String, _ global: GlobalOptions, fetch: @escaping @Sendable (RPCClient) async throws -> JSONValue
    ) async throws {
        let output = global.output
        let target = ObjectWait.Target(
            id: id, filter: EventFilterParams(objects: [id], types: ["source.*"]), fetch: fetch,
            end: SourceRender.pollEnd, progress: { source, _ in SourceRender.progress(source) })
        let (source, end) = try await ObjectWait(global).run(target)
        output.source(source)
        try end.check()
    }
}

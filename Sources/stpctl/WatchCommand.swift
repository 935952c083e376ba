import ArgumentParser
import Foundation
import JSONRPC
import RPCTransport
import StpctlKit
import StpdProtocol

/// `stpctl watch` (alias `monitor`): subscribes and prints events until interrupted,
/// reconnecting and resuming after the last event printed when the connection ends.
struct WatchCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Stream events until interrupted; reconnects and resumes after the last event printed.",
        discussion: """
            Prints one line per event. When stdout is not a terminal, or with --json, each line is one \
            compact JSON object: {"seq", "type", "time", "objectId", "object"}, written as soon as the \
            event arrives (stpctl watch | head -1 works). On a terminal: local time, seq, type, object \
            id and a short summary of the object (secrets left out).

            When the connection ends (stpd restarted, stopped, or it dropped this subscriber for being \
            too slow), watch reconnects with backoff (0.1 s doubling to 2 s) and subscribes again from \
            the last event printed, so no event is missed or printed twice. If stpd no longer keeps \
            those events (CursorExpired), a warning naming the oldest seq kept goes to stderr and \
            watch continues from there. On a terminal, a status line on stderr says when it is \
            reconnecting.

            Exit status: 0 on SIGINT or SIGTERM, or when the reader of stdout goes away; 3 if the \
            first connection fails; 6 when the connection ends with --no-reconnect (the message \
            names the --since that resumes). --timeout bounds waiting for each subscribe reply, \
            not the stream.

            Examples:
              stpctl watch
              stpctl watch --since 0 --type 'paymentContext.*' | jq -c .
              stpctl watch --object pc_123 --object pc_456
            """,
        aliases: ["monitor"])

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    @Option(help: ArgumentHelp("First replay the events after this seq (0: every event still kept).", valueName: "seq"))
    var since: Int64?

    @OptionGroup(title: "Filter") var filter: EventFilterOptions

    @Flag(help: "Exit with status 6 when the connection ends instead of reconnecting.")
    var noReconnect = false

    func validate() throws {
        if let since, since < 0 { throw ValidationError("--since must be 0 or more") }
    }

    func run() async throws {
        let connection = try global.connection()
        let watcher = Watcher(
            socketPath: connection.socketPath, filter: filter.params,
            subscribeTimeout: global.callTimeout, reconnect: !noReconnect, human: global.output.format == .human,
            showSecrets: global.showSecrets, statusLines: isatty(STDERR_FILENO) == 1)
        EventStream.exitOnInterruptOrClosedOutput()
        try await watcher.run(from: WatchCursor(since: since))
    }
}

/// The reconnect loop of `watch`: one session per connection, the cursor carried across.
struct Watcher: Sendable {
    let socketPath: String
    let filter: EventFilterParams?
    let subscribeTimeout: Double
    let reconnect: Bool
    let human: Bool
    /// Print events' secrets as they are (`--show-secrets`); else as `Secrets` redacts them.
    let showSecrets: Bool
    /// Say on stderr when reconnecting (stderr is a terminal).
    let statusLines: Bool

    enum End: Sendable {
        /// The daemon closed the connection (restart, stop, crash).
        case closed
        /// `events.dropped`: the daemon gave up on this subscriber; the connection closes next.
        case dropped(reason: String)
        /// No subscription was made: connect or subscribe failed.
        case failed(any Error)
    }

    struct Session: Sendable {
        var cursor: WatchCursor
        var subscribed: Bool
        var end: End
    }

    /// Returns only by throwing: the first connection failing, or any ending with --no-reconnect.
    /// Interrupts end the process from `EventStream`.
    func run(from start: WatchCursor) async throws {
        var cursor = start
        var backoff = Backoff()
        var subscribedOnce = false
        var reconnecting = false
        while true {
            let session = await session(from: cursor, resuming: subscribedOnce, reconnecting: reconnecting)
            cursor = session.cursor
            if session.subscribed {
                subscribedOnce = true
                reconnecting = false
                backoff.reset()
            }
            switch session.end {
            case .closed:
                guard reconnect else {
                    throw StpctlFailure.connectionEnded(
                        "stpd at \(socketPath) closed the connection" + resumeHint(cursor))
                }
            case .dropped(let reason):
                guard reconnect else {
                    throw StpctlFailure.connectionEnded(
                        "stpd dropped the subscription (\(reason))" + resumeHint(cursor))
                }
                Output.diagnostic(
                    "warning: stpd dropped the subscription (\(reason)); resuming after seq \(cursor.since ?? 0)")
            case .failed(let error):
                guard reconnect, Self.isTransient(error, subscribedOnce: subscribedOnce) else { throw error }
            }
            if statusLines, !reconnecting {
                Output.diagnostic("reconnecting to \(socketPath)…")
            }
            reconnecting = true
            try await Task.sleep(for: backoff.delay())
        }
    }

    /// Worth retrying: the daemon shutting down, and after a first success any connection
    /// problem (the daemon restarting). Before it, a failure is more likely a wrong socket.
    static func isTransient(_ error: any Error, subscribedOnce: Bool) -> Bool {
        switch error {
        case let reply as RPCError: return reply.code == StpdErrors.shuttingDown.code
        case RPCClientError.cannotConnect, RPCClientError.connectionClosed: return subscribedOnce
        case StpctlFailure.timeout: return subscribedOnce
        default: return false
        }
    }

    func resumeHint(_ cursor: WatchCursor) -> String {
        cursor.since.map { "; resume with --since \($0)" } ?? ""
    }

    /// One connection: subscribe, print events until it ends. Never throws: the error, if any,
    /// is in `end`, with the cursor as far as it got.
    func session(from start: WatchCursor, resuming: Bool, reconnecting: Bool) async -> Session {
        do {
            return try await RPCClient.withConnection(to: socketPath) { client in
                var cursor = start
                let subscription: String
                do {
                    let reply = try await subscribe(client, &cursor, resuming: resuming)
                    subscription = reply.subscription
                    cursor.subscribed(latestSeq: reply.latestSeq)
                } catch {
                    return Session(cursor: cursor, subscribed: false, end: .failed(error))
                }
                if reconnecting, statusLines {
                    Output.diagnostic("reconnected to \(socketPath); resuming after seq \(cursor.since ?? 0)")
                }
                for await notification in client.notifications {
                    guard let params = notification.params, params["subscription"]?.stringValue == subscription else {
                        continue
                    }
                    switch notification.method {
                    case Notifications.event.method:
                        guard let seq = params["seq"]?.intValue else { continue }
                        if cursor.accept(seq: seq) {
                            let shown = showSecrets ? params : Secrets.redacted(params)
                            EventStream.emit(human ? EventRender.humanLine(shown) : EventRender.jsonLine(shown))
                        }
                    case Notifications.dropped.method:
                        if let resumeSince = params["resumeSince"]?.intValue {
                            cursor.dropped(resumeSince: resumeSince)
                        }
                        return Session(
                            cursor: cursor, subscribed: true,
                            end: .dropped(reason: params["reason"]?.stringValue ?? "unknown"))
                    default:
                        continue
                    }
                }
                return Session(cursor: cursor, subscribed: true, end: .closed)
            }
        } catch {
            return Session(cursor: start, subscribed: false, end: .failed(error))
        }
    }

    /// `events.subscribe` from the cursor. CursorExpired moves the cursor to what is still kept
    /// (with a warning); so does CursorAhead on a resume (the daemon's log was reset). Given by
    /// the user with --since, CursorAhead is an error (status 1).
    func subscribe(_ client: RPCClient, _ cursor: inout WatchCursor, resuming: Bool) async throws
        -> EventsSubscribe.Result
    {
        var retries = 0
        while true {
            let params = EventsSubscribe.Params(since: cursor.since, filter: filter)
            let seconds = subscribeTimeout
            let path = socketPath
            do {
                return try await withTimeout(
                    seconds: seconds, onTimeout: { StpctlFailure.timeout(seconds: seconds, socket: path) }
                ) {
                    try await client.call(EventsSubscribe.self, params)
                }
            } catch let error as RPCError where retries < 3 {
                retries += 1
                if error.code == StpdErrors.cursorExpired.code, let oldest = error.data?["oldestSeq"]?.intValue {
                    Output.diagnostic(cursor.cursorExpired(oldestSeq: oldest))
                } else if error.code == StpdErrors.cursorAhead.code, resuming,
                    let latest = error.data?["latestSeq"]?.intValue
                {
                    Output.diagnostic(cursor.cursorAhead(latestSeq: latest))
                } else {
                    throw error
                }
            }
        }
    }
}

/// `--object` and `--type`, shared by the commands that read events.
struct EventFilterOptions: ParsableArguments {
    @Option(
        name: .customLong("object"),
        help: ArgumentHelp("Only events of this object id (repeat for several).", valueName: "id"))
    var objects: [String] = []

    @Option(
        name: .customLong("type"),
        help: ArgumentHelp(
            "Only events of this type; kind.* matches every type of a kind (repeatable).", valueName: "type"))
    var types: [String] = []

    func validate() throws {
        if objects.contains(where: \.isEmpty) { throw ValidationError("--object needs an object id") }
        if types.contains(where: \.isEmpty) { throw ValidationError("--type needs an event type (or kind.*)") }
    }

    /// Nil when neither option is given: every event.
    var params: EventFilterParams? {
        if objects.isEmpty, types.isEmpty { return nil }
        return EventFilterParams(objects: objects.isEmpty ? nil : objects, types: types.isEmpty ? nil : types)
    }
}

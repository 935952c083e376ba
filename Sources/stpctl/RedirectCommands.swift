import ArgumentParser
import Foundation
import JSONRPC
import StpctlKit
import StpdProtocol

/// The `redirect` namespace: redirect sessions (`redirect.*`), the SDK's STPRedirectContext.
struct RedirectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redirect",
        abstract: "Redirect sessions: send the customer to a bank or 3-D Secure page and back.",
        discussion: """
            A session is created for a Source or a PaymentIntent, started (which gives the URL to \
            open), and completed by its return URL arriving (stpctl handle-url, run by the desktop) \
            or, in browser mode and automatic mode on a native app, by app.foreground; the app reports \
            what its browser did (closed, loadFailed, nativeOpenFailed) with redirect report. stpd then \
            follows it up (polls the Source, re-fetches the PaymentIntent) and records the outcome.

            Examples:
              stpctl redirect create --source src_123
              xdg-open "$(stpctl redirect start rdr_123 --url)"
              stpctl redirect wait rdr_123 --timeout 600
            """,
        subcommands: [
            RedirectCreateCommand.self, RedirectStartCommand.self, RedirectReportCommand.self,
            ObjectShowCommand<RedirectListing>.self, ObjectListCommand<RedirectListing>.self,
            RedirectCancelCommand.self, RedirectWaitCommand.self,
        ])
}

extension Output {
    /// A session reply: `key: value` lines for people, its JSON otherwise.
    func redirect(_ session: JSONValue) {
        result(session) { RedirectRender.session($0) }
    }
}

extension GlobalOptions {
    /// Calls a `redirect.*` method that answers with the session, and prints the session.
    func printRedirect<M: RPCMethod>(_ method: M.Type, _ params: M.Params) async throws
    where M.Result == RedirectSessionView {
        output.redirect(asJSON(try await connection().run { try await $0.call(M.self, params) }))
    }
}

struct RedirectCreateCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Opens a redirect session for a Source or a PaymentIntent (status notStarted).",
        discussion: """
            Give --source (with --client-secret unless the Source was created or retrieved through \
            stpd) or --payment-intent with the PaymentIntent's client secret. A client secret given \
            as an option is visible to other local users (ps).

            \(RedirectCreate.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @Option(help: ArgumentHelp("The Source to redirect for.", valueName: "src_...")) var source: String?
    @Option(help: ArgumentHelp("The Source's client secret.", valueName: "secret")) var clientSecret: String?
    @Option(help: ArgumentHelp("The PaymentIntent's client secret.", valueName: "pi_..._secret_..."))
    var paymentIntent: String?
    @Option(
        help: ArgumentHelp(
            "Seconds to poll the Source after the redirect completes (default: stpd's STPD_REDIRECT_POLL_TIMEOUT).",
            valueName: "seconds"))
    var followUpTimeout: Double?

    func validate() throws {
        switch (source, paymentIntent) {
        case (nil, nil): throw ValidationError("give --source or --payment-intent")
        case (_?, _?): throw ValidationError("give --source or --payment-intent, not both")
        case (nil, _?) where clientSecret != nil:
            throw ValidationError("--client-secret goes with --source; --payment-intent is itself the client secret")
        default: break
        }
        if let followUpTimeout, !(followUpTimeout.isFinite && followUpTimeout >= 0) {
            throw ValidationError("--follow-up-timeout must be 0 or more seconds")
        }
    }

    func run() async throws {
        // validate() took exactly one of the two.
        let target: RedirectCreate.Params.Target =
            if let paymentIntent { .paymentIntent(.init(clientSecret: paymentIntent)) } else {
                .source(.init(id: source ?? "", clientSecret: clientSecret))
            }
        let params = RedirectCreate.Params(target, followUpTimeout: followUpTimeout)
        try await global.printRedirect(RedirectCreate.self, params)
    }
}

/// The `ID` argument of the commands after `create`. Its form is the daemon's to check.
struct RedirectIDArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The redirect session id (rdr_...).", valueName: "id"))
    var id: String

    var params: RedirectSessionParams { RedirectSessionParams(session: id) }
}

/// `--mode` spelled for a shell (`in-app`), mapped to the contract's values.
enum ModeArgument: String, ExpressibleByArgument, CaseIterable {
    case automatic
    case inApp = "in-app"
    case browser

    var mode: RedirectMode {
        switch self {
        case .automatic: .automatic
        case .inApp: .inApp
        case .browser: .browser
        }
    }
}

enum OpenerArgument: String, ExpressibleByArgument, CaseIterable {
    case app, daemon

    var opener: RedirectOpener { self == .app ? .app : .daemon }
}

struct RedirectStartCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "start",
        abstract: "Starts a session and prints the URL to open.",
        discussion: """
            With --url only the URL is printed, on one line, piped or not: \
            xdg-open "$(stpctl redirect start rdr_123 --url)".

            \(RedirectStart.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: RedirectIDArgument
    @Option(
        help:
            "automatic (default): the native app URL if any, else the page in-app; in-app: completes only on the return URL; browser: the page."
    )
    var mode: ModeArgument?
    @Option(help: "Who opens the URL: app (default: you) or daemon (STPD_URL_OPENER, off unless configured).")
    var opener: OpenerArgument?
    @Flag(help: "Print only the URL to open.")
    var url = false

    func run() async throws {
        let params = RedirectStart.Params(session: target.id, mode: mode?.mode, opener: opener?.opener)
        let session = try await global.connection().run { try await $0.call(RedirectStart.self, params) }
        guard url else { return global.output.redirect(asJSON(session)) }
        guard let open = session.openURL else {
            throw StpctlFailure.ended("redirect session \(session.id) has no URL to open (status \(session.status))")
        }
        Output.write(open, to: .standardOutput)
    }
}

/// `--outcome` spelled for a shell (`load-failed`), mapped to the contract's values.
enum ReportOutcomeArgument: String, ExpressibleByArgument, CaseIterable {
    case closed
    case loadFailed = "load-failed"
    case nativeOpenFailed = "native-open-failed"

    var outcome: RedirectReportOutcome {
        switch self {
        case .closed: .closed
        case .loadFailed: .loadFailed
        case .nativeOpenFailed: .nativeOpenFailed
        }
    }
}

struct RedirectReportCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Tells stpd what the browser or web view did: closed, load-failed or native-open-failed.",
        discussion: """
            Examples:
              stpctl redirect report rdr_123 closed
              stpctl redirect report rdr_123 native-open-failed     # then open the new openURL

            \(RedirectReport.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: RedirectIDArgument
    @Argument(help: "closed, load-failed or native-open-failed.") var outcome: ReportOutcomeArgument
    @Option(
        help: ArgumentHelp("load-failed (required there): the URL whose load failed.", valueName: "url")
    )
    var url: String?
    @Option(help: ArgumentHelp("What the app saw, carried in the error's data.message.", valueName: "text"))
    var message: String?

    func run() async throws {
        let params = RedirectReport.Params(session: target.id, outcome: outcome.outcome, url: url, message: message)
        try await global.printRedirect(RedirectReport.self, params)
    }
}

struct RedirectCancelCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: RedirectCancel.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: RedirectIDArgument

    func run() async throws {
        let params = target.params
        try await global.printRedirect(RedirectCancel.self, params)
    }
}

struct RedirectWaitCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Waits for a session's outcome (redirect.outcome) or its cancellation, then prints the session.",
        discussion: """
            Follows the session's events (redirect.*). On a terminal a progress line says what it \
            waits for and since when.

            Exit status: 0 when the outcome arrived without an error (read the Source's or \
            PaymentIntent's status from outcome.result); 1 when it completed or was followed up with \
            an error (printed on stderr), or was cancelled; 4 when --timeout passes first. Without \
            --timeout it waits as long as the customer takes.
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: RedirectIDArgument

    func run() async throws {
        let output = global.output
        let params = target.params
        let waiter = ObjectWait.Target(
            id: target.id, filter: EventFilterParams(objects: [target.id], types: ["redirect.*"]),
            fetch: { asJSON(try await $0.call(RedirectGet.self, params)) },
            end: RedirectRender.end, progress: RedirectRender.progress)
        let (session, end) = try await ObjectWait(global).run(waiter)
        output.redirect(session)
        try end.check()
    }
}

// MARK: handle-url and app.*

struct HandleURLCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "handle-url",
        abstract: "Hands a return URL to stpd, which completes the redirect session waiting for it.",
        discussion: """
            The desktop runs it as `stpctl handle-url %u` for the app's URL scheme (see \
            contrib/desktop). It never prompts, and prints nothing on success unless stdout is a \
            terminal (the session id) or --json is given. The URL is never echoed: return URLs may \
            carry client secrets.

            Exit status: 0 a session matched and completed; 5 no session in progress matched; 1 \
            stpd refused the call (a malformed URL is error -32602); 3 stpd is not running.

            \(HandleURL.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @Argument(help: ArgumentHelp("The URL the desktop handed over.", valueName: "url"))
    var url: String

    func run() async throws {
        let output = global.output
        let params = HandleURL.Params(url: url)
        let result = try await global.connection().run { try await $0.call(HandleURL.self, params) }
        // Launched by the desktop, stdout goes to a log nobody reads: quiet there unless --json.
        // On a terminal, the session completed (a miss is said on stderr below).
        let show = output.format == .human ? result.handled : output.format == .prettyJSON || global.json
        if show { output.result(result) { "completed redirect session \($0.session ?? "?")" } }
        guard result.handled else {
            throw StpctlFailure.noSessionMatched("no redirect session in progress matched the URL")
        }
    }
}

struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Tell stpd the app came to the foreground or went to the background.",
        discussion: """
            The SDK reads these from iOS; on Linux the app says so. foreground resumes paused \
            Source polls and completes redirect sessions in the automatic and browser modes; \
            background pauses polls.
            """,
        subcommands: [AppForegroundCommand.self, AppBackgroundCommand.self])
}

struct AppForegroundCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "foreground", abstract: AppForeground.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let output = global.output
        let result = try await global.connection().run { try await $0.call(AppForeground.self, NoParams()) }
        output.result(result) { RedirectRender.lifecycle(asJSON($0), pollsVerb: "resumed") }
    }
}

struct AppBackgroundCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "background", abstract: AppBackground.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let output = global.output
        let result = try await global.connection().run { try await $0.call(AppBackground.self, NoParams()) }
        output.result(result) { RedirectRender.lifecycle(asJSON($0), pollsVerb: "paused") }
    }
}

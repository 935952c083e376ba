import ArgumentParser
import JSONRPC
import StpctlKit
import StpdProtocol

/// stpctl's side of a listed kind: `show ID` and `list` are one generic command each
/// (`ObjectShowCommand<SourceListing>` is `stpctl source show`); a kind says how its objects print.
protocol ShownKind: ListedKind where Status: ExpressibleByArgument {
    /// The help of `show`'s id argument.
    static var idArgument: ArgumentHelp { get }
    /// More on `show`, for its --help.
    static var showDiscussion: String { get }
    /// One object, as `show` prints it.
    static func print(_ view: View, _ output: Output)
    /// A page, for people (`list`).
    static func render(_ page: [JSONValue]) -> String
}

extension ShownKind {
    static var showDiscussion: String { "" }
}

struct ObjectShowCommand<K: ShownKind>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "show", abstract: ObjectGet<K>.summary, discussion: K.showDiscussion)
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @Argument(help: K.idArgument) var id: String

    func run() async throws {
        let params = K.IDParams(objectID: id)
        K.print(try await global.connection().run { try await $0.call(ObjectGet<K>.self, params) }, global.output)
    }
}

struct ObjectListCommand<K: ShownKind>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "list", abstract: ObjectList<K>.summary)
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var list: ListOptions<K.Status>

    func run() async throws {
        let result = try await list.fetch(ObjectList<K>.self, on: global.connection())
        global.output.result(result) { K.render($0.items.map(asJSON)) }
    }
}

extension SourceListing: ShownKind {
    static let idArgument = ArgumentHelp("The Source id (src_...).", valueName: "id")
    static func print(_ view: SourceView, _ output: Output) { output.source(asJSON(view)) }
    static func render(_ page: [JSONValue]) -> String { SourceRender.sources(page) }
}

extension RedirectListing: ShownKind {
    static let idArgument = ArgumentHelp("The redirect session id (rdr_...).", valueName: "id")
    static func print(_ view: RedirectSessionView, _ output: Output) { output.redirect(asJSON(view)) }
    static func render(_ page: [JSONValue]) -> String { RedirectRender.sessions(page) }
}

extension CustomerListing: ShownKind {
    static let idArgument = ArgumentHelp("The customer session id (cses_...).", valueName: "session")
    static func print(_ view: CustomerSessionView, _ output: Output) { output.session(view) }
    static func render(_ page: [JSONValue]) -> String { CustomerRender.sessions(page) }
}

extension PaymentContextListing: ShownKind {
    static let idArgument = ArgumentHelp("The payment context id (pctx_...).", valueName: "context")
    static let showDiscussion = """
        On a terminal: the amount and total, the summary items, the options (the selected one \
        marked *), shipping, where requestPayment is, the pending action to answer and the last result.
        """
    static func print(_ view: PaymentContextView, _ output: Output) { output.context(view) }
    static func render(_ page: [JSONValue]) -> String { ContextRender.contexts(page) }
}

extension IntentListing: ShownKind {
    static var idArgument: ArgumentHelp { ArgumentHelp("The intent's id (pi_... or seti_...).", valueName: "id") }
    static func print(_ view: IntentView, _ output: Output) { output.result(view) { IntentRender.intent(asJSON($0)) } }
    static func render(_ page: [JSONValue]) -> String { IntentRender.intents(page) }
}

// `stpctl source create TYPE`: one generic subcommand per STPSourceParams constructor, its options
// read from the contract's schema of that constructor, and --raw.
import ArgumentParser
import Foundation
import JSONRPC
import RPCTransport
import StpctlKit
import StpdProtocol

/// Options every `source create` variant takes.
struct SourceCreateOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Appended to the return URL as redirect_merchant_name (default: stpd's STPD_MERCHANT_NAME, else stpctl).",
            valueName: "name"))
    var merchantName: String?

    func create(_ constructor: SourceConstructor, _ global: GlobalOptions) async throws {
        let output = global.output
        let params = SourceCreate.Params(params: constructor, merchantName: merchantName)
        let result = try await global.connection().run { try await $0.call(SourceCreate.self, params) }
        output.result(result) {
            SourceRender.source(asJSON($0.source), clientSecret: $0.clientSecret, showSecret: output.showSecrets)
        }
    }
}

struct SourceCreateCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: SourceCreate.summary,
        discussion: """
            One subcommand per constructor of the SDK's STPSourceParams, whose options are the \
            constructor's arguments in the contract (stpctl source create TYPE --help lists them); \
            amounts are in the currency's minor unit (1099 = 10.99). For anything else, --raw takes \
            Stripe's own POST /v1/sources fields as one JSON object with a type (- reads it from stdin).

            The reply carries the Source's client secret; it prints as [REDACTED] (JSON included) \
            unless --show-secrets. stpd keeps it, so later commands need not be given it. Options given \
            on a command line are visible to other local users (ps): keep real card numbers and \
            IBANs out of them, or pass them with --raw -.
            """,
        subcommands: SourceTypes.commands)

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup var rawOption: RawSourceOption

    func run() async throws {
        guard let raw = rawOption.raw else {
            throw ValidationError("give a source type (see stpctl source create --help) or --raw JSON")
        }
        let text = raw == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : raw
        guard let fields = try? JSONCoding.decode([String: JSONValue].self, from: Data(text.utf8)) else {
            throw ValidationError("--raw needs one JSON object, e.g. {\"type\": \"sofort\", ...}")
        }
        try await common.create(SourceConstructor(raw: fields), global)
    }
}

/// `--raw`, an option of `source create` itself. ArgumentParser also accepts a parent's options
/// after a subcommand's name, so the TYPE subcommands declare it too (hidden), to refuse it
/// rather than ignore it.
struct RawSourceOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Stripe's source fields as one JSON object with a type, instead of a TYPE; - reads stdin.",
            valueName: "json"))
    var raw: String?
}

/// A typed constructor `source create` offers: the `SourceConstructor` member it fills, whose
/// schema in the contract gives the subcommand's options (`--return-url` for `returnURL`).
protocol SourceType {
    static var member: String { get }
    static var abstract: String { get }
    /// A rule across options the schema does not state.
    static func check(_ arguments: JSONValue) throws
}

extension SourceType {
    static func check(_ arguments: JSONValue) throws {}
}

/// The constructors with a subcommand: those whose arguments are all scalars (Klarna's order lines,
/// Visa Checkout and Masterpass go through --raw or `stpctl call`).
enum SourceTypes {
    static let commands: [any ParsableCommand.Type] = [
        SourceTypeCommand<Card>.self, SourceTypeCommand<Sofort>.self, SourceTypeCommand<Ideal>.self,
        SourceTypeCommand<Bancontact>.self, SourceTypeCommand<Giropay>.self, SourceTypeCommand<EPS>.self,
        SourceTypeCommand<P24>.self, SourceTypeCommand<Multibanco>.self, SourceTypeCommand<SepaDebit>.self,
        SourceTypeCommand<ThreeDSecure>.self, SourceTypeCommand<Alipay>.self, SourceTypeCommand<AlipayReusable>.self,
        SourceTypeCommand<WechatPay>.self,
    ]

    enum Card: SourceType {
        static let member = "card"
        static let abstract = "A card Source (flow none)."
    }
    enum Sofort: SourceType {
        static let member = "sofort"
        static let abstract = "SOFORT (EUR; a bank redirect)."
    }
    enum Ideal: SourceType {
        static let member = "ideal"
        static let abstract = "iDEAL (EUR; a bank redirect)."
    }
    enum Bancontact: SourceType {
        static let member = "bancontact"
        static let abstract = "Bancontact (EUR; a bank redirect)."
    }
    enum Giropay: SourceType {
        static let member = "giropay"
        static let abstract = "giropay (EUR; a bank redirect)."
    }
    enum EPS: SourceType {
        static let member = "eps"
        static let abstract = "EPS (EUR; a bank redirect)."
    }
    enum P24: SourceType {
        static let member = "p24"
        static let abstract = "Przelewy24 (EUR or PLN; a bank redirect)."
    }
    enum Multibanco: SourceType {
        static let member = "multibanco"
        static let abstract = "Multibanco (EUR; the customer pays in)."
    }
    enum SepaDebit: SourceType {
        static let member = "sepaDebit"
        static let abstract = "SEPA Direct Debit (EUR, reusable)."
    }
    enum ThreeDSecure: SourceType {
        static let member = "threeDSecure"
        static let abstract = "3-D Secure for a card Source (a redirect to the card issuer)."
    }
    enum Alipay: SourceType {
        static let member = "alipay"
        static let abstract = "Alipay, single use."
        static func check(_ arguments: JSONValue) throws {
            if (arguments["appBundleId"] == nil) != (arguments["appVersion"] == nil) {
                throw ValidationError("give both --app-bundle-id and --app-version, or neither")
            }
        }
    }
    enum AlipayReusable: SourceType {
        static let member = "alipayReusable"
        static let abstract = "Alipay, reusable (no amount)."
    }
    enum WechatPay: SourceType {
        static let member = "wechatPay"
        static let abstract = "WeChat Pay (returns through the WeChat app)."
    }
}

/// `source create TYPE`: one command for every constructor, its options those of `T.member` in
/// `SourceConstructor.schema`, checked against it before anything is sent.
struct SourceTypeCommand<T: SourceType>: AsyncParsableCommand, ClientCommand {
    static var options: SchemaOptions {
        SchemaOptions(
            SourceConstructor.schema.json["properties"]?[T.member].map(JSONSchema.init) ?? .empty,
            definitions: StpdAPI.schemas.mapValues(\.json))
    }

    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: SchemaOptions.kebab(T.member), abstract: T.abstract,
            discussion: "Options (from the contract's \(T.member) constructor):\n\(options.help())")
    }

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("The constructor's arguments, as --name value (listed above).", valueName: "options"))
    var arguments: [String] = []

    func validate() throws { _ = try constructor() }

    func constructor() throws -> SourceConstructor {
        let fields: JSONValue
        do { fields = try Self.options.parse(arguments) } catch { throw ValidationError(error.description) }
        try T.check(fields)
        return try JSONCoding.typed(SourceConstructor.self, from: [T.member: fields])
    }

    func run() async throws {
        guard rawOption.raw == nil else { throw ValidationError("give a TYPE or --raw, not both") }
        try await common.create(try constructor(), global)
    }
}

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
            SourceCreateCommand.self, SourceShowCommand.self, SourceListCommand.self, SourceRetrieveCommand.self,
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

// MARK: create

/// Options every `source create` variant takes.
struct SourceCreateOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Appended to the return URL as redirect_merchant_name (default: stpd's STPD_MERCHANT_NAME).", valueName: "name"))
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
            One subcommand per constructor of the SDK's STPSourceParams; amounts are in the \
            currency's minor unit (1099 = 10.99). For anything else, --raw takes Stripe's own \
            POST /v1/sources fields as one JSON object with a type (- reads it from stdin).

            The reply carries the Source's client secret; it prints as [REDACTED] (JSON included) \
            unless --show-secrets. stpd keeps it, so later commands need not be given it. Options given \
            on a command line are visible to other local users (ps): keep real card numbers and \
            IBANs out of them, or pass them with --raw -.
            """,
        subcommands: [
            SourceCardCommand.self, SourceSofortCommand.self, SourceIdealCommand.self, SourceBancontactCommand.self,
            SourceGiropayCommand.self, SourceEPSCommand.self, SourceP24Command.self, SourceMultibancoCommand.self,
            SourceSepaDebitCommand.self, SourceThreeDSecureCommand.self, SourceAlipayCommand.self,
            SourceAlipayReusableCommand.self, SourceWechatPayCommand.self,
        ])

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
    @Option(help: ArgumentHelp(
        "Stripe's source fields as one JSON object with a type, instead of a TYPE; - reads stdin.", valueName: "json"))
    var raw: String?
}

/// A `source create TYPE` subcommand: builds its constructor; creating and printing are shared.
protocol SourceTypeCommand: AsyncParsableCommand, ClientCommand {
    var common: SourceCreateOptions { get }
    var rawOption: RawSourceOption { get }
    func constructor() -> SourceConstructor
}

extension SourceTypeCommand {
    func run() async throws {
        guard rawOption.raw == nil else { throw ValidationError("give a TYPE or --raw, not both") }
        try await common.create(constructor(), global)
    }
}

/// `--amount` and `--return-url`, which the redirect-based types share.
struct RedirectSourceOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Amount in the currency's minor unit (1099 = 10.99).", valueName: "minor-units"))
    var amount: Int

    @Option(help: ArgumentHelp(
        "Where the customer comes back to: your app's URL scheme (see stpctl handle-url).", valueName: "url"))
    var returnURL: String

    func validate() throws {
        guard amount > 0 else { throw ValidationError("--amount must be a positive number of minor units") }
    }
}

struct SourceCardCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "card", abstract: "A card Source (flow none).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @Option(help: "The card number.") var number: String
    @Option(help: "Expiry month, 1 to 12.") var expMonth: Int
    @Option(help: "Expiry year, four digits.") var expYear: Int
    @Option(help: "Card verification code.") var cvc: String?
    @Option(help: "Cardholder name.") var name: String?
    @Option(help: "Billing street.") var addressLine1: String?
    @Option(help: "Billing street, more.") var addressLine2: String?
    @Option(help: "Billing city.") var city: String?
    @Option(help: "Billing state or region.") var state: String?
    @Option(help: "Billing postal code.") var zip: String?
    @Option(help: "Billing country (two-letter ISO code).") var country: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(card: CardInput(
            number: number, expMonth: expMonth, expYear: expYear, cvc: cvc, name: name, addressLine1: addressLine1,
            addressLine2: addressLine2, city: city, state: state, zip: zip, country: country))
    }
}

struct SourceSofortCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "sofort", abstract: "SOFORT (EUR; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "The country of the customer's bank (two-letter ISO code).") var country: String
    @Option(help: "Text on the customer's statement.") var statementDescriptor: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(sofort: .init(
            amount: redirect.amount, returnURL: redirect.returnURL, country: country, statementDescriptor: statementDescriptor))
    }
}

struct SourceIdealCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "ideal", abstract: "iDEAL (EUR; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "The account holder.") var name: String?
    @Option(help: "The customer's bank, e.g. ing.") var bank: String?
    @Option(help: "Text on the customer's statement.") var statementDescriptor: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(ideal: .init(
            amount: redirect.amount, name: name, returnURL: redirect.returnURL, statementDescriptor: statementDescriptor,
            bank: bank))
    }
}

/// Bancontact, giropay and EPS take the same options.
struct NamedRedirectOptions: ParsableArguments {
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "The account holder's full name.") var name: String
    @Option(help: "Text on the customer's statement.") var statementDescriptor: String?

    var params: SourceConstructor.NamedRedirect {
        .init(amount: redirect.amount, name: name, returnURL: redirect.returnURL, statementDescriptor: statementDescriptor)
    }
}

struct SourceBancontactCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "bancontact", abstract: "Bancontact (EUR; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var options: NamedRedirectOptions
    func constructor() -> SourceConstructor { SourceConstructor(bancontact: options.params) }
}

struct SourceGiropayCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "giropay", abstract: "giropay (EUR; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var options: NamedRedirectOptions
    func constructor() -> SourceConstructor { SourceConstructor(giropay: options.params) }
}

struct SourceEPSCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "eps", abstract: "EPS (EUR; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var options: NamedRedirectOptions
    func constructor() -> SourceConstructor { SourceConstructor(eps: options.params) }
}

struct SourceP24Command: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "p24", abstract: "Przelewy24 (EUR or PLN; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "Three-letter ISO currency code: eur or pln.") var currency: String
    @Option(help: "The account holder's email.") var email: String
    @Option(help: "The account holder.") var name: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(p24: .init(
            amount: redirect.amount, currency: currency, email: email, name: name, returnURL: redirect.returnURL))
    }
}

struct SourceMultibancoCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "multibanco", abstract: "Multibanco (EUR; the customer pays in).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "The customer's email.") var email: String

    func constructor() -> SourceConstructor {
        SourceConstructor(multibanco: .init(amount: redirect.amount, returnURL: redirect.returnURL, email: email))
    }
}

struct SourceSepaDebitCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "sepa-debit", abstract: "SEPA Direct Debit (EUR, reusable).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @Option(help: "The account holder.") var name: String
    @Option(help: "The account's IBAN.") var iban: String
    @Option(help: "Holder's street.") var addressLine1: String?
    @Option(help: "Holder's city.") var city: String?
    @Option(help: "Holder's postal code.") var postalCode: String?
    @Option(help: "Holder's country (two-letter ISO code).") var country: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(sepaDebit: .init(
            name: name, iban: iban, addressLine1: addressLine1, city: city, postalCode: postalCode, country: country))
    }
}

struct SourceThreeDSecureCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(
        commandName: "three-d-secure", abstract: "3-D Secure for a card Source (a redirect to the card issuer).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "Three-letter ISO currency code, e.g. eur.") var currency: String
    @Option(help: ArgumentHelp("The card Source to authenticate.", valueName: "src_...")) var card: String

    func constructor() -> SourceConstructor {
        SourceConstructor(threeDSecure: .init(
            amount: redirect.amount, currency: currency, returnURL: redirect.returnURL, card: card))
    }
}

struct SourceAlipayCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "alipay", abstract: "Alipay, single use.")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "Three-letter ISO currency code, e.g. eur.") var currency: String
    @Option(help: "The app Alipay returns to (with --app-version).") var appBundleId: String?
    @Option(help: "That app's version (with --app-bundle-id).") var appVersion: String?

    func validate() throws {
        if (appBundleId == nil) != (appVersion == nil) { throw ValidationError("give both --app-bundle-id and --app-version, or neither") }
    }

    func constructor() -> SourceConstructor {
        SourceConstructor(alipay: .init(
            amount: redirect.amount, currency: currency, returnURL: redirect.returnURL, appBundleId: appBundleId,
            appVersion: appVersion))
    }
}

struct SourceAlipayReusableCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(commandName: "alipay-reusable", abstract: "Alipay, reusable (no amount).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @Option(help: "Three-letter ISO currency code, e.g. eur.") var currency: String
    @Option(help: ArgumentHelp("Where the customer comes back to.", valueName: "url")) var returnURL: String

    func constructor() -> SourceConstructor {
        SourceConstructor(alipayReusable: .init(currency: currency, returnURL: returnURL))
    }
}

struct SourceWechatPayCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(
        commandName: "wechat-pay", abstract: "WeChat Pay (returns through the WeChat app).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @Option(help: ArgumentHelp("Amount in the currency's minor unit (1099 = 10.99).", valueName: "minor-units"))
    var amount: Int
    @Option(help: "Three-letter ISO currency code, e.g. cny.") var currency: String
    @Option(help: "The WeChat app id (the app's return URL scheme).") var appId: String
    @Option(help: "Text on the customer's statement.") var statementDescriptor: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(wechatPay: .init(
            amount: amount, currency: currency, appId: appId, statementDescriptor: statementDescriptor))
    }
}

// MARK: the other source.* methods

/// The `ID` argument of the commands after `create`. Its form is the daemon's to check.
struct SourceIDArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The Source id (src_...).", valueName: "id"))
    var id: String
}

struct SourceShowCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: SourceGet.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SourceIDArgument

    func run() async throws {
        let output = global.output
        let params = SourceIDParams(id: target.id)
        output.source(asJSON(try await global.connection().run { try await $0.call(SourceGet.self, params) }))
    }
}

struct SourceListCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: SourceList.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions

    func run() async throws {
        let output = global.output
        let result = try await global.connection().run { try await $0.call(SourceList.self, NoParams()) }
        output.result(result) { SourceRender.sources($0.sources.map(asJSON)) }
    }
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
    @Option(help: ArgumentHelp(
        "The Source's client secret; not needed when it was created or retrieved through stpd.", valueName: "secret"))
    var clientSecret: String?
    @Option(help: ArgumentHelp("Seconds the poll runs, at most 300 (the default).", valueName: "seconds"))
    var pollTimeout: Double?
    @Flag(help: "Wait for the poll to end, then print the Source (see stpctl source wait).")
    var wait = false

    func validate() throws {
        if let pollTimeout, !(pollTimeout.isFinite && pollTimeout >= 0) { throw ValidationError("--poll-timeout must be 0 or more seconds") }
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

// `stpctl source create TYPE`: one subcommand per STPSourceParams constructor, and --raw.
import ArgumentParser
import Foundation
import JSONRPC
import RPCTransport
import StpctlKit
import StpdProtocol
import StripeAPI

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
    @Option(
        help: ArgumentHelp(
            "Stripe's source fields as one JSON object with a type, instead of a TYPE; - reads stdin.",
            valueName: "json"))
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

    @Option(
        help: ArgumentHelp(
            "Where the customer comes back to: your app's URL scheme (see stpctl handle-url), or 'loopback' for stpd's own return on 127.0.0.1.",
            valueName: "url"))
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
        SourceConstructor(
            card: CardInput(
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
        SourceConstructor(
            sofort: .init(
                amount: redirect.amount, returnURL: redirect.returnURL, country: country,
                statementDescriptor: statementDescriptor))
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
        SourceConstructor(
            ideal: .init(
                amount: redirect.amount, name: name, returnURL: redirect.returnURL,
                statementDescriptor: statementDescriptor,
                bank: bank))
    }
}

/// Bancontact, giropay and EPS take the same options.
struct NamedRedirectOptions: ParsableArguments {
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "The account holder's full name.") var name: String
    @Option(help: "Text on the customer's statement.") var statementDescriptor: String?

    var params: SourceConstructor.NamedRedirect {
        .init(
            amount: redirect.amount, name: name, returnURL: redirect.returnURL, statementDescriptor: statementDescriptor
        )
    }
}

struct SourceBancontactCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(
        commandName: "bancontact", abstract: "Bancontact (EUR; a bank redirect).")
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
    static let configuration = CommandConfiguration(
        commandName: "p24", abstract: "Przelewy24 (EUR or PLN; a bank redirect).")
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var common: SourceCreateOptions
    @OptionGroup(visibility: .hidden) var rawOption: RawSourceOption
    @OptionGroup var redirect: RedirectSourceOptions
    @Option(help: "Three-letter ISO currency code: eur or pln.") var currency: String
    @Option(help: "The account holder's email.") var email: String
    @Option(help: "The account holder.") var name: String?

    func constructor() -> SourceConstructor {
        SourceConstructor(
            p24: .init(
                amount: redirect.amount, currency: currency, email: email, name: name, returnURL: redirect.returnURL))
    }
}

struct SourceMultibancoCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(
        commandName: "multibanco", abstract: "Multibanco (EUR; the customer pays in).")
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
    static let configuration = CommandConfiguration(
        commandName: "sepa-debit", abstract: "SEPA Direct Debit (EUR, reusable).")
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
        SourceConstructor(
            sepaDebit: .init(
                name: name, iban: iban, addressLine1: addressLine1, city: city, postalCode: postalCode, country: country
            ))
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
        SourceConstructor(
            threeDSecure: .init(
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
        if (appBundleId == nil) != (appVersion == nil) {
            throw ValidationError("give both --app-bundle-id and --app-version, or neither")
        }
    }

    func constructor() -> SourceConstructor {
        SourceConstructor(
            alipay: .init(
                amount: redirect.amount, currency: currency, returnURL: redirect.returnURL, appBundleId: appBundleId,
                appVersion: appVersion))
    }
}

struct SourceAlipayReusableCommand: SourceTypeCommand {
    static let configuration = CommandConfiguration(
        commandName: "alipay-reusable", abstract: "Alipay, reusable (no amount).")
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
        SourceConstructor(
            wechatPay: .init(
                amount: amount, currency: currency, appId: appId, statementDescriptor: statementDescriptor))
    }
}

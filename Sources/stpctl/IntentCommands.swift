import ArgumentParser
import Foundation
import JSONRPC
import StpctlKit
import StpdProtocol

/// The `payment-intent` and `setup-intent` namespaces: one generic command per method, for either
/// kind of intent (`K`).
struct IntentCommand<K: IntentNaming>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: K.command,
            abstract:
                "\(K.noun)s: confirm them with any payment method, handle their next actions, verify microdeposits.",
            discussion: """
                The client secret comes from your server. A client secret given as an argument is visible \
                to other local users (ps); on a terminal an answer prints as key: value lines, the result \
                first; otherwise, or with --json, the reply's JSON. confirm, handle-next-action and \
                verify-microdeposits exit 1 when the result is failed. docs/next-actions.md lists every \
                next action and how it ends.

                Examples:
                  stpctl \(K.command) confirm \(K.idPrefix)123_secret_456 --payment-method '{"sepaDebit": {"iban": "DE89370400440532013000"}, "billingDetails": {"name": "Jo", "email": "jo@example.com"}}'
                  stpctl \(K.command) confirm \(K.idPrefix)123_secret_456 --id pm_card_visa --return-url myapp://done --start in-app
                  stpctl \(K.command) confirm \(K.idPrefix)123_secret_456 --id pm_card_authenticationRequired --return-url loopback
                  stpctl \(K.command) verify-microdeposits \(K.idPrefix)123_secret_456 --amounts 32,45
                  stpctl \(K.command) show \(K.idPrefix)123
                """,
            subcommands: [
                IntentConfirmCommand<K>.self, IntentRetrieveCommand<K>.self, IntentHandleCommand<K>.self,
                IntentVerifyCommand<K>.self, ObjectShowCommand<IntentListing<K>>.self,
                ObjectListCommand<IntentListing<K>>.self,
                IntentStopCommand<K>.self,
            ])
    }
}

extension IntentNaming {
    /// The stpctl namespace: `payment-intent`, `setup-intent`.
    static var command: String {
        prefix.reduce(into: "") { name, c in name += c.isUppercase ? "-" + c.lowercased() : String(c) }
    }
}

struct ClientSecretArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The intent's client secret.", valueName: "client-secret"))
    var clientSecret: String
}

/// Where a redirect, if one is needed, sends the customer back, and how to start it.
struct RedirectOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Where the bank or 3-D Secure page returns to: your app's URL, or 'loopback' for stpd's own return on 127.0.0.1 (needs no URL scheme).",
            valueName: "url"))
    var returnURL: String?
    @Option(help: ArgumentHelp("Start the redirect session at once in this mode.", valueName: "mode"))
    var start: ModeArgument?
    @Option(
        help: ArgumentHelp(
            "A voucher (OXXO, Boleto, Konbini...): 'open' its hosted page as a redirect session, as the SDK does (the default), or 'display' it yourself from nextAction.details.",
            valueName: "handling"))
    var voucher: VoucherHandling?

    var startOptions: RedirectStartOptions? { start.map { RedirectStartOptions(mode: $0.mode) } }
}

extension IntentPollStatus: ExpressibleByArgument {}
extension VoucherHandling: ExpressibleByArgument {}

/// A JSON option's value decoded as the contract's type, or a usage error naming the option.
func decodeOption<T: Decodable>(_ type: T.Type, _ json: String, option: String) throws -> T {
    do {
        return try JSONCoding.decode(T.self, from: Data(json.utf8))
    } catch {
        throw ValidationError("\(option) is not a valid JSON object for it: \(error)")
    }
}

extension GlobalOptions {
    /// Prints an answer and exits 1 when its result is failed.
    func printAnswer<K: IntentNaming>(_ answer: IntentAnswer<K>) throws {
        output.result(answer) { IntentRender.answer(asJSON($0), member: K.prefix) }
        if answer.result == .failed { throw ExitCode(ExitStatus.daemonError.rawValue) }
    }

    func printIntent(_ view: IntentView) {
        output.result(view) { IntentRender.intent(asJSON($0)) }
    }
}

struct IntentConfirmCommand<K: IntentNaming>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "confirm", abstract: IntentConfirm<K>.summary,
            discussion: """
                Give --id (a saved PaymentMethod) or --payment-method with paymentIntent.confirm's \
                paymentMethod object as JSON (a member per type, with billingDetails); stpctl describe \
                \(K.prefix).confirm lists the types.

                \(IntentConfirm<K>.description ?? "")
                """)
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var secret: ClientSecretArgument
    @Option(help: ArgumentHelp("A saved PaymentMethod.", valueName: "pm_...")) var id: String?
    @Option(help: ArgumentHelp("The paymentMethod object, as JSON.", valueName: "json")) var paymentMethod: String?
    @Option(
        help: ArgumentHelp(
            "paymentMethodOptions as JSON, e.g. '{\"card\":{\"network\":\"visa\"}}' or any type's under raw.",
            valueName: "json"))
    var paymentMethodOptions: String?
    @Option(
        help: ArgumentHelp(
            "A PaymentIntent's shipping as JSON (Affirm and Afterpay need it): name, address, phone...",
            valueName: "json"))
    var shipping: String?
    @OptionGroup var redirect: RedirectOptions

    func validate() throws {
        guard (id == nil) != (paymentMethod == nil) else { throw ValidationError("give --id or --payment-method") }
    }

    func run() async throws {
        let method =
            try id.map { PaymentMethodInput(id: $0) }
            ?? decodeOption(PaymentMethodInput.self, paymentMethod ?? "", option: "--payment-method")
        let params = IntentConfirm<K>.Params(
            clientSecret: secret.clientSecret, paymentMethod: method, returnURL: redirect.returnURL,
            start: redirect.startOptions,
            paymentMethodOptions: try paymentMethodOptions.map {
                try decodeOption(ConfirmPaymentMethodOptions.self, $0, option: "--payment-method-options")
            },
            shipping: try shipping.map { try decodeOption(ConfirmShipping.self, $0, option: "--shipping") },
            voucher: redirect.voucher)
        try global.printAnswer(try await global.connection().run { try await $0.call(IntentConfirm<K>.self, params) })
    }
}

struct IntentRetrieveCommand<K: IntentNaming>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "retrieve", abstract: IntentRetrieve<K>.summary)
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var secret: ClientSecretArgument

    func run() async throws {
        let params = IntentRetrieve<K>.Params(clientSecret: secret.clientSecret)
        let reply = try await global.connection().run { try await $0.call(IntentRetrieve<K>.self, params) }
        global.output.result(reply) { IntentRender.retrieved(asJSON($0), member: K.prefix) }
    }
}

struct IntentHandleCommand<K: IntentNaming>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "handle-next-action", abstract: IntentHandleNextAction<K>.summary,
            discussion: IntentHandleNextAction<K>.description ?? "")
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var secret: ClientSecretArgument
    @OptionGroup var redirect: RedirectOptions

    func run() async throws {
        let params = IntentHandleNextAction<K>.Params(
            clientSecret: secret.clientSecret, returnURL: redirect.returnURL, start: redirect.startOptions,
            voucher: redirect.voucher)
        try global.printAnswer(
            try await global.connection().run { try await $0.call(IntentHandleNextAction<K>.self, params) })
    }
}

struct IntentVerifyCommand<K: IntentNaming>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "verify-microdeposits", abstract: IntentVerifyMicrodeposits<K>.summary,
            discussion: IntentVerifyMicrodeposits<K>.description ?? "")
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var secret: ClientSecretArgument
    @Option(help: ArgumentHelp("The two deposits in cents, e.g. 32,45.", valueName: "cents,cents"))
    var amounts: String?
    @Option(help: ArgumentHelp("The descriptor code of the one deposit (SM...).", valueName: "code"))
    var descriptorCode: String?

    /// `--amounts` as two whole numbers.
    var cents: [Int]? {
        amounts.map { $0.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    }

    func validate() throws {
        guard (amounts == nil) != (descriptorCode == nil) else {
            throw ValidationError("give --amounts or --descriptor-code")
        }
        if let cents, cents.count != 2 { throw ValidationError("--amounts takes two whole numbers: 32,45") }
    }

    func run() async throws {
        // validate() took exactly one of the two, and two amounts.
        let proof: IntentVerifyMicrodeposits<K>.Params.Proof =
            if let cents, cents.count == 2 { .amounts(cents[0], cents[1]) } else {
                .descriptorCode(descriptorCode ?? "")
            }
        let params = IntentVerifyMicrodeposits<K>.Params(clientSecret: secret.clientSecret, proof: proof)
        try global.printAnswer(
            try await global.connection().run { try await $0.call(IntentVerifyMicrodeposits<K>.self, params) })
    }
}

struct IntentIDArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The intent's id (pi_... or seti_...).", valueName: "id"))
    var id: String
}

struct IntentStopCommand<K: IntentNaming>: AsyncParsableCommand, ClientCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "stop", abstract: IntentStopPolling<K>.summary)
    }
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: IntentIDArgument

    func run() async throws {
        let params = IntentIDParams(id: target.id)
        global.printIntent(try await global.connection().run { try await $0.call(IntentStopPolling<K>.self, params) })
    }
}

import ArgumentParser
import Foundation
import JSONRPC
import StpctlKit
import StpdProtocol

/// The `context` namespace: payment contexts (`paymentContext.*`), the SDK's STPPaymentContext.
struct ContextCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "context",
        abstract: "Payment contexts: choose a payment method and pay, over a customer session.",
        discussion: """
            A context loads the customer's cards, and request-payment runs the SDK's requestPayment: \
            it waits for input it lacks (needs paymentOption: select one; needs shippingAddress), \
            then asks the app with a didCreatePaymentResult pending action. The app pays on its \
            backend and answers it (context answer pact_... --status success); the context's last \
            result is the SDK's didFinish. Follow its events with: stpctl watch --type 'paymentContext.*'.

            Examples:
              stpctl context create --session cses_123 --amount 1099 --currency eur
              stpctl context show pctx_123
              stpctl context request-payment pctx_123
              stpctl context answer pact_456 --status success
              stpctl context answer pact_456 --status error --error "Your card was declined"
            """,
        subcommands: [
            ContextCreateCommand.self, ObjectListCommand<PaymentContextListing>.self,
            ObjectShowCommand<PaymentContextListing>.self, ContextSelectCommand.self,
            ContextRequestPaymentCommand.self, ContextAnswerCommand.self, ContextCancelCommand.self,
            ContextRetryCommand.self, ContextCloseCommand.self,
        ])
}

extension Output {
    /// A context reply: `key: value` lines for people, its JSON otherwise.
    func context(_ context: PaymentContextView) {
        result(context) { ContextRender.context(asJSON($0)) }
    }
}

extension GlobalOptions {
    /// Calls a `paymentContext.*` method that answers with the context, and prints the context.
    func printContext<M: RPCMethod>(_ method: M.Type, _ params: M.Params) async throws
    where M.Result == PaymentContextView {
        output.context(try await connection().run { try await $0.call(M.self, params) })
    }
}

struct ContextCreateCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Creates a payment context over a customer session and starts loading it.",
        discussion: """
            The reply is the context while it loads (loading: yes); show it again, or watch its \
            paymentContext.didChange events, for the loaded options.

            \(PaymentContextCreate.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @Option(help: ArgumentHelp("The customer session it uses.", valueName: "cses_...")) var session: String
    @Option(
        help: ArgumentHelp("The amount in the currency's minor unit (1099 is 10.99 USD).", valueName: "minor-units"))
    var amount: Int
    @Option(help: ArgumentHelp("ISO currency (default USD).", valueName: "code")) var currency: String?
    @Option(help: ArgumentHelp("ISO country (default US).", valueName: "code")) var country: String?
    @Option(
        help: ArgumentHelp("The total's label (default: stpd's STPD_MERCHANT_NAME, else stpctl).", valueName: "name"))
    var companyName: String?
    @Option(
        help: ArgumentHelp(
            "The option selected once loaded, if it is one of the customer's cards.", valueName: "pm_..."))
    var defaultPaymentMethod: String?
    @Flag(help: "The app validates shipping addresses (answers didUpdateShippingAddress pending actions).")
    var validatesShipping = false
    @Option(
        help: ArgumentHelp(
            "Seconds a pending action waits for its answer (default: stpd's STPD_PENDING_ACTION_TIMEOUT).",
            valueName: "seconds"))
    var pendingActionTimeout: Double?

    func validate() throws {
        if amount < 0 { throw ValidationError("--amount must be 0 or more (minor units)") }
        if let pendingActionTimeout, !(pendingActionTimeout.isFinite && pendingActionTimeout >= 1) {
            throw ValidationError("--pending-action-timeout must be 1 second or more")
        }
    }

    func run() async throws {
        let params = PaymentContextCreate.Params(
            session: session, amount: amount, currency: currency, country: country,
            configuration: companyName.map { PaymentConfiguration(companyName: $0) },
            validatesShipping: validatesShipping ? true : nil, defaultPaymentMethod: defaultPaymentMethod,
            pendingActionTimeout: pendingActionTimeout)
        try await global.printContext(PaymentContextCreate.self, params)
    }
}

/// The `CTX` argument of the commands after `create`. Its form is the daemon's to check.
struct ContextIDArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The payment context id (pctx_...).", valueName: "context"))
    var context: String

    var params: PaymentContextParams { PaymentContextParams(context: context) }
}

struct ContextSelectCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "select", abstract: PaymentContextSelectPaymentMethod.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: ContextIDArgument
    @Argument(help: ArgumentHelp("One of the context's options (pm_...).", valueName: "payment-method"))
    var paymentMethod: String

    func run() async throws {
        let params = PaymentContextSelectPaymentMethod.Params(context: target.context, paymentMethod: paymentMethod)
        try await global.printContext(PaymentContextSelectPaymentMethod.self, params)
    }
}

struct ContextRequestPaymentCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "request-payment",
        abstract: "Runs the SDK's requestPayment; the app answers its didCreatePaymentResult pending action.",
        discussion: """
            The reply comes at once; what follows is in the context (show) and its events: needs, \
            then a pending action to answer with `stpctl context answer`, then the last result.

            With --payment-intent (the PaymentIntent's client secret) stpd confirms it with the \
            selected card instead of asking the app. A client secret given as an option is visible \
            to other local users (ps).

            \(PaymentContextRequestPayment.description ?? "")
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: ContextIDArgument
    @Option(help: ArgumentHelp("Let stpd confirm this PaymentIntent.", valueName: "pi_..._secret_..."))
    var paymentIntent: String?
    @Option(
        help: ArgumentHelp(
            "With --payment-intent: the return URL of a 3-D Secure or bank redirect, or 'loopback' for stpd's own.",
            valueName: "url"))
    var returnURL: String?

    func validate() throws {
        if returnURL != nil, paymentIntent == nil { throw ValidationError("--return-url goes with --payment-intent") }
    }

    func run() async throws {
        let params = PaymentContextRequestPayment.Params(
            context: target.context, paymentIntent: paymentIntent.map { .init(clientSecret: $0, returnURL: returnURL) })
        try await global.printContext(PaymentContextRequestPayment.self, params)
    }
}

/// `--status` spelled for a shell (`user-cancellation`), mapped to the contract's values.
enum AnswerStatusArgument: String, ExpressibleByArgument, CaseIterable {
    case success, error
    case userCancellation = "user-cancellation"
    case valid, invalid

    /// The contract's value.
    var status: PendingActionAnswer {
        switch self {
        case .success: .success
        case .error: .error
        case .userCancellation: .userCancellation
        case .valid: .valid
        case .invalid: .invalid
        }
    }

    /// Whether an `--error` goes with it (the others finish without one).
    var takesError: Bool { self == .error || self == .invalid }
}

struct ContextAnswerCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: PaymentContextAnswer.summary,
        discussion: """
            A didCreatePaymentResult action is answered success, error (with --error, shown to the \
            customer) or user-cancellation; a didUpdateShippingAddress action valid (with the \
            methods for that address: --shipping-method, repeated, and --selected-shipping-method) \
            or invalid (with --error). The action id is the context's pending action (stpctl context \
            show). An action answered already, timed out or unknown is error 5001 (exit status 1).

            Examples:
              stpctl context answer pact_456 --status success
              stpctl context answer pact_456 --status error --error "Card declined"
              stpctl context answer pact_789 --status valid \\
                --shipping-method 'ups:UPS Ground:599' --shipping-method fedex:FedEx:1299 \\
                --selected-shipping-method ups
            """)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @Argument(help: ArgumentHelp("The pending action id (pact_...).", valueName: "action"))
    var action: String
    @Option(
        help:
            "The answer: success, error or user-cancellation (didCreatePaymentResult); valid or invalid (didUpdateShippingAddress)."
    )
    var status: AnswerStatusArgument
    @Option(
        name: .customLong("error"),
        help: ArgumentHelp("With error or invalid: the message shown to the customer.", valueName: "message"))
    var errorMessage: String?
    @Option(help: ArgumentHelp("With --error: the app's own code for it.", valueName: "code"))
    var errorCode: String?
    @Option(
        name: .customLong("shipping-method"),
        help: ArgumentHelp(
            "With valid: a shipping method for the address, its amount in minor units (repeatable).",
            valueName: "id:label:amount"))
    var shippingMethods: [ShippingMethodArgument] = []
    @Option(help: ArgumentHelp("With valid: the preselected shipping method.", valueName: "id"))
    var selectedShippingMethod: String?

    func validate() throws {
        if errorMessage != nil, !status.takesError {
            throw ValidationError("--error goes with --status error or invalid")
        }
        if errorCode != nil, errorMessage == nil { throw ValidationError("--error-code goes with --error") }
        if status != .valid, !shippingMethods.isEmpty || selectedShippingMethod != nil {
            throw ValidationError("--shipping-method and --selected-shipping-method go with --status valid")
        }
    }

    func run() async throws {
        let params = PaymentContextAnswer.Params(
            action: action, status: status.status,
            error: errorMessage.map { .init(message: $0, code: errorCode) },
            shippingMethods: status == .valid
                ? shippingMethods.map { ShippingMethod(identifier: $0.identifier, label: $0.label, amount: $0.amount) }
                : nil,
            selectedShippingMethod: selectedShippingMethod)
        try await global.printContext(PaymentContextAnswer.self, params)
    }
}

struct ContextCancelCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: PaymentContextCancel.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: ContextIDArgument

    func run() async throws {
        let params = target.params
        try await global.printContext(PaymentContextCancel.self, params)
    }
}

struct ContextRetryCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "retry", abstract: PaymentContextRetryLoading.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: ContextIDArgument

    func run() async throws {
        let params = target.params
        try await global.printContext(PaymentContextRetryLoading.self, params)
    }
}

struct ContextCloseCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "close", abstract: PaymentContextClose.summary)
    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: ContextIDArgument

    func run() async throws {
        let params = target.params
        try await global.printContext(PaymentContextClose.self, params)
    }
}

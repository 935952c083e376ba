import ArgumentParser
import Foundation
import JSONRPC
import StpctlKit
import StpdProtocol

/// The `customer` namespace: customer sessions (`customer.*`), one subcommand per method.
struct CustomerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customer",
        abstract: "Customer sessions: open, inspect and change them.",
        discussion: """
            Sessions are owned by your uid (root sees everyone's). On a terminal, sessions print \
            as a table or as key: value lines; otherwise, or with --json, the reply's JSON. \
            Credentials are shown back as [REDACTED].

            Examples:
              stpctl customer open --app --no-prefetch
              STPD_AUTHORIZATION="Bearer $T" stpctl customer open --backend https://shop/stpd
              stpctl customer open --stripe-key-url https://shop/keys --authorization-file f
              stpctl customer list
              stpctl customer payment-methods cses_123
              stpctl customer select cses_123 pm_456
            """,
        subcommands: [
            CustomerOpenCommand.self, ObjectListCommand<CustomerListing>.self, ObjectShowCommand<CustomerListing>.self,
            CustomerRetrieveCommand.self, CustomerPaymentMethodsCommand.self, CustomerAttachCommand.self,
            CustomerDetachCommand.self, CustomerSelectCommand.self, CustomerClearCacheCommand.self,
            CustomerCloseCommand.self,
        ])
}

extension Output {
    /// A session reply: `key: value` lines for people, its JSON otherwise.
    func session(_ view: CustomerSessionView) {
        result(view) { CustomerRender.session((try? JSONCoding.value(of: $0)) ?? .null) }
    }
}

extension GlobalOptions {
    /// Calls a `customer.*` method that answers with the session, and prints the session.
    func printSession<M: RPCMethod>(_ method: M.Type, _ params: M.Params) async throws
    where M.Result == CustomerSessionView {
        output.session(try await connection().run { try await $0.call(M.self, params) })
    }
}

extension CustomerAdapter {
    init(_ choice: CustomerAdapterChoice, includeApplePay: Bool, timeout: Double?) {
        let applePay: Bool? = includeApplePay ? true : nil
        switch choice {
        case .stripeKeyURL(let url, let authorization):
            self.init(
                kind: .stripe, keyProvider: KeyProvider(kind: .backend, url: url, authorization: authorization),
                includeApplePayPaymentMethods: applePay, timeout: timeout)
        case .stripeAppKeys:
            self.init(
                kind: .stripe, keyProvider: KeyProvider(kind: .app), includeApplePayPaymentMethods: applePay,
                timeout: timeout)
        case .stripeServerCustomer(let customer):
            self.init(
                kind: .stripe, keyProvider: KeyProvider(kind: .server, customer: customer),
                includeApplePayPaymentMethods: applePay, timeout: timeout)
        case .backend(let url, let authorization):
            self.init(
                kind: .backend, url: url, authorization: authorization, includeApplePayPaymentMethods: applePay,
                timeout: timeout)
        case .app:
            self.init(kind: .app, includeApplePayPaymentMethods: applePay, timeout: timeout)
        }
    }
}

struct CustomerOpenCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: CustomerOpen.summary,
        discussion: """
            Give exactly one adapter option: --stripe-key-url, --stripe-app-keys, \
            --stripe-server-customer, --backend or --app.

            The Authorization value for --stripe-key-url and --backend comes from \
            --authorization-file, else --authorization, else $\(CustomerAdapterOptions.authorizationVariable). \
            A value given as a flag is visible to other users in the process list (ps); prefer the \
            file or the environment. stpd stores it and never shows it back.

            \(CustomerOpen.description ?? "")
            """)

    @OptionGroup(title: "Global Options") var global: GlobalOptions

    @OptionGroup(title: "Adapter") var adapter: CustomerAdapterOptions

    @Flag(help: "Do not fetch the customer and its payment methods now (stripe sessions fetch them at open).")
    var noPrefetch = false

    func run() async throws {
        let output = global.output
        let choice = try adapter.choice(environment: ProcessInfo.processInfo.environment)
        let params = CustomerOpen.Params(
            adapter: CustomerAdapter(choice, includeApplePay: adapter.includeApplePay, timeout: adapter.timeoutSeconds),
            prefetch: noPrefetch ? false : nil)
        let session = try await global.connection().run { try await $0.call(CustomerOpen.self, params) }
        output.session(session)
    }
}

/// The `SESSION` argument every command after `open` and `list` takes. Its form is the
/// daemon's to check: a malformed or unknown id is its error reply (status 1).
struct SessionArgument: ParsableArguments {
    @Argument(help: ArgumentHelp("The customer session id (cses_...).", valueName: "session"))
    var session: String

    var params: SessionParams { SessionParams(session: session) }
}

struct CustomerRetrieveCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "customer", abstract: CustomerRetrieve.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument

    func run() async throws {
        let output = global.output
        let params = target.params
        let result = try await global.connection().run { try await $0.call(CustomerRetrieve.self, params) }
        output.result(result) { CustomerRender.customer($0.customer) }
    }
}

struct CustomerPaymentMethodsCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "payment-methods",
        abstract: CustomerListPaymentMethods.summary,
        discussion: "On a terminal, one line per method: id, brand, last four digits and expiry.")

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument

    func run() async throws {
        let output = global.output
        let params = target.params
        let result = try await global.connection().run { try await $0.call(CustomerListPaymentMethods.self, params) }
        output.result(result) { CustomerRender.paymentMethods($0.paymentMethods) }
    }
}

struct CustomerAttachCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach", abstract: CustomerAttachPaymentMethod.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument
    @Argument(help: ArgumentHelp("The PaymentMethod id (pm_...).", valueName: "payment-method"))
    var paymentMethod: String

    func run() async throws {
        let params = PaymentMethodParams(session: target.session, paymentMethod: paymentMethod)
        try await global.printSession(CustomerAttachPaymentMethod.self, params)
    }
}

struct CustomerDetachCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "detach", abstract: CustomerDetachPaymentMethod.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument
    @Argument(help: ArgumentHelp("The PaymentMethod id (pm_...).", valueName: "payment-method"))
    var paymentMethod: String

    func run() async throws {
        let params = PaymentMethodParams(session: target.session, paymentMethod: paymentMethod)
        try await global.printSession(CustomerDetachPaymentMethod.self, params)
    }
}

struct CustomerSelectCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(
        commandName: "select", abstract: CustomerSelectPaymentMethod.summary,
        discussion: "Give a PaymentMethod id, or --none to forget the selection.")

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument
    @Argument(help: ArgumentHelp("The PaymentMethod id (pm_...).", valueName: "payment-method"))
    var paymentMethod: String?
    @Flag(help: "Forget the last selected PaymentMethod.")
    var none = false

    func validate() throws {
        switch (paymentMethod, none) {
        case (nil, false): throw ValidationError("give a PaymentMethod id, or --none")
        case (_?, true): throw ValidationError("give a PaymentMethod id or --none, not both")
        default: break
        }
    }

    func run() async throws {
        // No payment method (--none) forgets the selection.
        try await global.printSession(
            CustomerSelectPaymentMethod.self, .init(session: target.session, paymentMethod: paymentMethod))
    }
}

struct CustomerClearCacheCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "clear-cache", abstract: CustomerClearCache.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument

    func run() async throws {
        let params = target.params
        try await global.printSession(CustomerClearCache.self, params)
    }
}

struct CustomerCloseCommand: AsyncParsableCommand, ClientCommand {
    static let configuration = CommandConfiguration(commandName: "close", abstract: CustomerClose.summary)

    @OptionGroup(title: "Global Options") var global: GlobalOptions
    @OptionGroup var target: SessionArgument

    func run() async throws {
        let params = target.params
        try await global.printSession(CustomerClose.self, params)
    }
}

import ArgumentParser
import Foundation

/// The adapter of a customer session as `stpctl customer open` was told it: exactly one of the
/// five adapter options. `stpctl` turns it into the protocol's `CustomerAdapter`.
public enum CustomerAdapterChoice: Equatable, Sendable {
    /// `--stripe-key-url`: Stripe with ephemeral keys from the merchant's endpoint.
    case stripeKeyURL(String, authorization: String?)
    /// `--stripe-app-keys`: Stripe with ephemeral keys the app creates.
    case stripeAppKeys
    /// `--stripe-server-customer`: Stripe with the daemon's own key, for this customer.
    case stripeServerCustomer(String)
    /// `--backend`: the merchant's own customer routes.
    case backend(String, authorization: String?)
    /// `--app`: the app answers each operation.
    case app
}

/// The adapter options of `stpctl customer open`. Checked while parsing (usage error, status 2):
/// exactly one adapter option; `--authorization` and `--authorization-file` not both, and only
/// with an adapter that sends one; `--timeout-seconds` from 1 to 300.
public struct CustomerAdapterOptions: ParsableArguments {
    /// Read when neither --authorization nor --authorization-file is given.
    public static let authorizationVariable = "STPD_AUTHORIZATION"

    @Option(
        name: .customLong("stripe-key-url"),
        help: ArgumentHelp(
            "Stripe with the customer's ephemeral keys, which this merchant endpoint creates.", valueName: "url"))
    public var stripeKeyURL: String?

    @Flag(
        name: .customLong("stripe-app-keys"), help: "Stripe with ephemeral keys the app creates (appRequest.pending).")
    public var stripeAppKeys = false

    @Option(
        name: .customLong("stripe-server-customer"),
        help: ArgumentHelp("Stripe with stpd's own secret or restricted key, for this customer.", valueName: "cus_id"))
    public var stripeServerCustomer: String?

    @Option(
        help: ArgumentHelp("The merchant's backend serving stpd's customer routes at this base URL.", valueName: "url"))
    public var backend: String?

    @Flag(help: "The app answers each operation (appRequest.pending events).")
    public var app = false

    @Option(
        help: ArgumentHelp(
            "Authorization header value for --stripe-key-url or --backend. Visible to other users in the process list: prefer --authorization-file or $\(Self.authorizationVariable).",
            valueName: "value"))
    public var authorization: String?

    @Option(
        name: .customLong("authorization-file"),
        help: ArgumentHelp(
            "Read the Authorization header value from this file (its first line); default: $\(Self.authorizationVariable).",
            valueName: "path"),
        completion: .file())
    public var authorizationFile: String?

    @Flag(name: .customLong("include-apple-pay"), help: "Show Apple Pay cards (hidden by default, as in the SDK).")
    public var includeApplePay = false

    @Option(
        name: .customLong("timeout-seconds"),
        help: ArgumentHelp(
            "Seconds the daemon waits for the backend or the app, 1 to 300 (default 30). The global --timeout is stpctl's own wait.",
            valueName: "seconds"))
    public var timeoutSeconds: Double?

    public init() {}

    /// The adapter options given, as their flag names, in declaration order.
    public var adapterFlags: [String] {
        [
            stripeKeyURL.map { _ in "--stripe-key-url" }, stripeAppKeys ? "--stripe-app-keys" : nil,
            stripeServerCustomer.map { _ in "--stripe-server-customer" }, backend.map { _ in "--backend" },
            app ? "--app" : nil,
        ].compactMap { $0 }
    }

    public func validate() throws {
        let given = adapterFlags
        guard !given.isEmpty else {
            throw ValidationError(
                "give one adapter: --stripe-key-url URL, --stripe-app-keys, --stripe-server-customer cus_..., --backend URL or --app"
            )
        }
        guard given.count == 1 else {
            throw ValidationError("\(given[0]) and \(given[1]) cannot be used together: give one adapter")
        }
        if authorization != nil, authorizationFile != nil {
            throw ValidationError("--authorization and --authorization-file cannot be used together")
        }
        if stripeKeyURL == nil, backend == nil {
            if authorization != nil { throw ValidationError("--authorization goes with --stripe-key-url or --backend") }
            if authorizationFile != nil {
                throw ValidationError("--authorization-file goes with --stripe-key-url or --backend")
            }
        }
        if let url = stripeKeyURL ?? backend, url.isEmpty { throw ValidationError("\(given[0]) needs a URL") }
        if let customer = stripeServerCustomer, !Self.isCustomerID(customer) {
            throw ValidationError("--stripe-server-customer needs a Stripe customer id (cus_...)")
        }
        if let authorization, authorization.isEmpty { throw ValidationError("--authorization needs a value") }
        if let timeoutSeconds, !(timeoutSeconds.isFinite && (1...300).contains(timeoutSeconds)) {
            throw ValidationError("--timeout-seconds must be from 1 to 300")
        }
    }

    static func isCustomerID(_ text: String) -> Bool {
        text.hasPrefix("cus_") && text.count > 4
            && text.dropFirst(4).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// The adapter, with the Authorization value from --authorization-file, else --authorization,
    /// else the environment (for the adapters that send one). A file that cannot be read or
    /// holds no value is a usage error (`StpctlFailure.usage`, status 2).
    public func choice(
        environment: [String: String],
        readFile: (String) throws -> String = { try String(contentsOfFile: $0, encoding: .utf8) }
    ) throws -> CustomerAdapterChoice {
        if let url = stripeKeyURL {
            return .stripeKeyURL(
                url, authorization: try resolvedAuthorization(environment: environment, readFile: readFile))
        }
        if let url = backend {
            return .backend(url, authorization: try resolvedAuthorization(environment: environment, readFile: readFile))
        }
        if let customer = stripeServerCustomer { return .stripeServerCustomer(customer) }
        if stripeAppKeys { return .stripeAppKeys }
        return .app
    }

    func resolvedAuthorization(environment: [String: String], readFile: (String) throws -> String) throws -> String? {
        if let path = authorizationFile {
            let contents: String
            do { contents = try readFile(path) } catch {
                throw StpctlFailure.usage("cannot read --authorization-file \(path): \(Self.reason(error))")
            }
            let value =
                contents.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
            guard !value.isEmpty else { throw StpctlFailure.usage("--authorization-file \(path) is empty") }
            return value
        }
        if let authorization { return authorization }
        if let value = environment[Self.authorizationVariable]?.trimmingCharacters(in: .whitespacesAndNewlines),
            !value.isEmpty
        {
            return value
        }
        return nil
    }

    static func reason(_ error: any Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return (error as NSError).localizedDescription
    }
}

import Foundation
import JSONRPC
import StpdCore
import StripeAPI

/// Sources and PaymentIntents over the daemon's Stripe client. Any key kind will do: the SDK makes
/// these calls with a publishable key, and a secret or restricted key can make them too.
///
/// The client secret is the caller's capability for its intent or Source whatever the key. Stripe
/// checks it on a publishable key's request only, so under a secret or restricted key every call
/// that names an object by its client secret reads the object first and compares its
/// `client_secret` (in constant time) before anything is returned, stored or acted on; a wrong
/// secret gets Stripe's own answer for an id that does not exist, after the same one read.
struct StripePaymentsAPI: PaymentsAPI {
    let stripe: StripeSetup
    var verified = VerifiedSecrets()

    private func client() throws -> StripeClient {
        try stripe.client(requiring: [.publishable, .secret, .restricted])
    }

    func createSource(_ params: [String: JSONValue]) async throws -> Source {
        let client = try client()
        return try await client.send(
            StripeRequest(.post, "/v1/sources", params: Self.signed(params, by: client)), as: Source.self)
    }

    /// The SDK's `payment_user_agent` on what makes a Source or a PaymentMethod (its params, or a
    /// confirmation's `payment_method_data`), naming stpd and its version. Sent with a publishable
    /// key, as the SDK sends it; a secret or restricted key sends none (Stripe's server-side types
    /// have no such field).
    static func signed(_ params: [String: JSONValue], by client: StripeClient) -> [String: JSONValue] {
        guard client.configuration.key.kind == .publishable else { return params }
        var params = params
        params["payment_user_agent"] = .string(client.configuration.userAgent.paymentUserAgent)
        return params
    }

    /// A new PaymentMethod's params as the SDK sends them with a publishable key: signed, and
    /// `allow_redisplay` `unspecified` unless given (STPPaymentMethodParams always sends it). A secret or
    /// restricted key sends neither: `unspecified` is Stripe's default, and stand-ins of Stripe's
    /// server API (localstripe) refuse the field.
    static func newPaymentMethod(_ params: [String: JSONValue], by client: StripeClient) -> [String: JSONValue] {
        guard client.configuration.key.kind == .publishable else { return params }
        var params = signed(params, by: client)
        params["allow_redisplay"] = params["allow_redisplay"] ?? "unspecified"
        return params
    }

    /// The whole form of a confirmation, as STPPaymentHandler sends it: the payment method expanded
    /// (`expand: ["payment_method"]`), signed as above. SDKConfirmFormTests holds it to the SDK's.
    static func confirmForm(_ params: PaymentIntentConfirmParams, by client: StripeClient)
        -> [String: JSONValue]
    {
        var form = params.formParams(for: client.configuration.key.kind)
        if let data = form["payment_method_data"]?.objectValue {
            form["payment_method_data"] = .object(newPaymentMethod(data, by: client))
        }
        form["expand"] = expandPaymentMethod
        return form
    }

    func retrieveSource(id: String, clientSecret: String) async throws -> Source {
        let client = try client()
        let response = try await client.response(
            for: StripeRequest(.get, "/v1/sources/\(id)", params: ["client_secret": .string(clientSecret)]))
        let source = try ResponseParser.parse(response, as: Source.self).get()
        try Self.check(clientSecret, against: source.clientSecret, of: .source, id: id, response, by: client)
        return source
    }

    /// Under a server key, `given` must be the object's own secret: else Stripe's answer for an
    /// unknown id, with the request id of the read that found it wrong.
    private static func check(
        _ given: String, against actual: String?, of object: SecretBearer, id: String, _ response: HTTPResponseData,
        by client: StripeClient
    ) throws {
        guard client.configuration.key.kind != .publishable, !ClientSecret.matches(given, actual) else { return }
        throw StripeError.noSuchObject(object, id: id, requestID: response.headers["Request-Id"])
    }

    /// One request of a poll. Of the client's retries only the 429's stay, as the SDK's request
    /// retries a 429 itself (1, 4, 9 s) before its poller sees it; the poller's schedule owns every
    /// other retry. Of the faults without a response, being offline (the name does not resolve, no
    /// route, a connect nobody answers) and a connection lost mid-request are retried by the poller
    /// (the SDK's -1009 and -1005); a timeout after connecting, a refused connect or a TLS failure
    /// ends the poll with its error.
    func pollSource(id: String, clientSecret: String) async -> PollFetchResult {
        var client: StripeClient
        do { client = try self.client() } catch {
            return .transportFailure(StripeError(kind: .authentication, message: "no Stripe key is configured"))
        }
        client.retryPolicy = Self.pollRetryPolicy(client.retryPolicy)
        let request = StripeRequest(.get, "/v1/sources/\(id)", params: ["client_secret": .string(clientSecret)])
        do {
            let response = try await client.response(for: request)
            switch ResponseParser.parse(response, as: Source.self) {
            case .success(let source):
                do {
                    try Self.check(
                        clientSecret, against: source.clientSecret, of: .source, id: id, response, by: client)
                } catch let error as StripeError {
                    return .httpError(status: 404, error)
                }
                return .source(source)
            case .failure where response.status == 200: return .source(nil)
            case .failure(let error): return .httpError(status: response.status, error)
            }
        } catch is CancellationError {
            return .cancelled
        } catch let error as StripeError {
            return Self.pollResult(of: error)
        } catch {
            return .transportFailure(
                StripeError(kind: .connection, message: Redaction.redact(String(describing: error))))
        }
    }

    static func pollRetryPolicy(_ policy: RetryPolicy) -> RetryPolicy {
        var policy = policy
        policy.maxTransientRetries = 0
        return policy
    }

    static func pollResult(of error: StripeError) -> PollFetchResult {
        error.fault == .offline || error.fault == .connectionLost ? .connectivity(error) : .transportFailure(error)
    }

    // The SDK expands an intent's payment method whenever it reads one: its type decides whether
    // `processing` is success, and how long a redirect's follow-up polls.
    private static let expandPaymentMethod: JSONValue = ["payment_method"]

    private func retrieve<Intent: StripeIntent>(_ clientSecret: String) async throws -> Intent {
        let client = try client()
        let id = ClientSecret.intentID(of: clientSecret)
        let response = try await client.response(
            for: StripeRequest(
                .get, "/v1/\(Intent.collection)/\(id)",
                params: ["client_secret": .string(clientSecret), "expand": Self.expandPaymentMethod]))
        let intent = try ResponseParser.parse(response, as: Intent.self).get()
        try Self.check(
            clientSecret, against: intent.clientSecret, of: Intent.secretBearer, id: id, response, by: client)
        if client.configuration.key.kind != .publishable { verified.remember(id: id, secret: clientSecret) }
        return intent
    }

    /// Before an intent is acted on under a server key: its secret found right, by a read unless
    /// this pair was found right before.
    private func authorize<Intent: StripeIntent>(_ type: Intent.Type, _ clientSecret: String, by client: StripeClient)
        async throws
    {
        guard client.configuration.key.kind != .publishable,
            !verified.contains(id: ClientSecret.intentID(of: clientSecret), secret: clientSecret)
        else { return }
        let _: Intent = try await retrieve(clientSecret)
    }

    private func confirm<Intent: StripeIntent>(_ params: PaymentIntentConfirmParams) async throws -> Intent {
        let client = try client()
        try await authorize(Intent.self, params.clientSecret, by: client)
        return try await client.send(
            StripeRequest(
                .post, "/v1/\(Intent.collection)/\(params.intentID)/confirm",
                params: Self.confirmForm(params, by: client)),
            as: Intent.self)
    }

    /// STPAPIClient's `refreshPaymentIntent`: the client secret under a publishable key (a server
    /// key names the intent by its path, its secret checked first), the payment method expanded.
    private func refresh<Intent: StripeIntent>(_ clientSecret: String) async throws -> Intent {
        let client = try client()
        try await authorize(Intent.self, clientSecret, by: client)
        var form: [String: JSONValue] = ["expand": Self.expandPaymentMethod]
        if client.configuration.key.kind == .publishable { form["client_secret"] = .string(clientSecret) }
        let id = ClientSecret.intentID(of: clientSecret)
        return try await client.send(
            StripeRequest(.post, "/v1/\(Intent.collection)/\(id)/refresh", params: form), as: Intent.self)
    }

    func ping(_ url: URL) async {
        guard let client = try? client() else { return }
        await client.ping(url)
    }

    func refreshPaymentIntent(clientSecret: String) async throws -> PaymentIntent {
        try await refresh(clientSecret)
    }

    func refreshSetupIntent(clientSecret: String) async throws -> SetupIntent {
        try await refresh(clientSecret)
    }

    private func verify<Intent: StripeIntent>(_ params: VerifyMicrodepositsParams) async throws -> Intent {
        let client = try client()
        try await authorize(Intent.self, params.clientSecret, by: client)
        var request = params.request(for: client.configuration.key.kind)
        request.params["expand"] = Self.expandPaymentMethod
        return try await client.send(request, as: Intent.self)
    }

    func retrievePaymentIntent(clientSecret: String) async throws -> PaymentIntent {
        try await retrieve(clientSecret)
    }

    func confirmPaymentIntent(_ params: PaymentIntentConfirmParams) async throws -> PaymentIntent {
        try await confirm(params)
    }

    func verifyPaymentIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> PaymentIntent {
        try await verify(params)
    }

    func retrieveSetupIntent(clientSecret: String) async throws -> SetupIntent {
        try await retrieve(clientSecret)
    }

    func confirmSetupIntent(_ params: PaymentIntentConfirmParams) async throws -> SetupIntent {
        try await confirm(params)
    }

    func verifySetupIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> SetupIntent {
        try await verify(params)
    }

    func createCardPaymentMethod(_ card: CardInput) async throws -> PaymentMethod {
        let client = try client()
        return try await client.send(
            StripeRequest(
                .post, "/v1/payment_methods",
                params: Self.newPaymentMethod(PaymentMethodData.card(card).createParams(), by: client)),
            as: PaymentMethod.self)
    }
}

/// Runs STPD_URL_OPENER with the URL as its last argument (no shell), as `xdg-open URL` would be.
struct CommandURLOpener: URLOpener {
    let command: [String]

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    func open(_ url: String) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0].contains("/") ? command[0] : "/usr/bin/env")
        process.arguments = (command[0].contains("/") ? [] : [command[0]]) + command.dropFirst() + [url]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch {
                process.terminationHandler = nil
                continuation.resume(
                    throwing: Failed(description: "cannot run \(command[0]): \(error.localizedDescription)"))
            }
        }
        guard status == 0 else { throw Failed(description: "\(command[0]) exited with status \(status)") }
    }
}

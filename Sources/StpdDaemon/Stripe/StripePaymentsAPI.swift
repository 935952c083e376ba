import Foundation
import JSONRPC
import StpdCore
import StripeAPI

/// Sources and PaymentIntents over the daemon's Stripe client. Any key kind will do: the SDK makes
/// these calls with a publishable key, and a secret or restricted key can make them too.
struct StripePaymentsAPI: PaymentsAPI {
    let stripe: StripeSetup

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

    static func confirmForm(_ params: PaymentIntentConfirmParams, by client: StripeClient)
        -> [String: JSONValue]
    {
        var form = params.formParams(for: client.configuration.key.kind)
        if let data = form["payment_method_data"]?.objectValue {
            form["payment_method_data"] = .object(signed(data, by: client))
        }
        return form
    }

    func retrieveSource(id: String, clientSecret: String) async throws -> Source {
        try await client().send(
            StripeRequest(.get, "/v1/sources/\(id)", params: ["client_secret": .string(clientSecret)]), as: Source.self)
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
            case .success(let source): return .source(source)
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

    private func retrieve<Intent: StripeModel>(_ collection: String, _ clientSecret: String) async throws -> Intent {
        let id = clientSecret.components(separatedBy: "_secret_")[0]
        return try await client().send(
            StripeRequest(
                .get, "/v1/\(collection)/\(id)",
                params: ["client_secret": .string(clientSecret), "expand": Self.expandPaymentMethod]),
            as: Intent.self)
    }

    private func confirm<Intent: StripeModel>(_ collection: String, _ params: PaymentIntentConfirmParams)
        async throws -> Intent
    {
        let client = try client()
        var form = Self.confirmForm(params, by: client)
        form["expand"] = Self.expandPaymentMethod
        return try await client.send(
            StripeRequest(.post, "/v1/\(collection)/\(params.intentID)/confirm", params: form), as: Intent.self)
    }

    private func verify<Intent: StripeModel>(_ params: VerifyMicrodepositsParams) async throws -> Intent {
        let client = try client()
        var request = params.request(for: client.configuration.key.kind)
        request.params["expand"] = Self.expandPaymentMethod
        return try await client.send(request, as: Intent.self)
    }

    func retrievePaymentIntent(clientSecret: String) async throws -> PaymentIntent {
        try await retrieve("payment_intents", clientSecret)
    }

    func confirmPaymentIntent(_ params: PaymentIntentConfirmParams) async throws -> PaymentIntent {
        try await confirm("payment_intents", params)
    }

    func verifyPaymentIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> PaymentIntent {
        try await verify(params)
    }

    func retrieveSetupIntent(clientSecret: String) async throws -> SetupIntent {
        try await retrieve("setup_intents", clientSecret)
    }

    func confirmSetupIntent(_ params: PaymentIntentConfirmParams) async throws -> SetupIntent {
        try await confirm("setup_intents", params)
    }

    func verifySetupIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> SetupIntent {
        try await verify(params)
    }

    func createCardPaymentMethod(_ card: CardInput) async throws -> PaymentMethod {
        let client = try client()
        return try await client.send(
            StripeRequest(
                .post, "/v1/payment_methods",
                params: Self.signed(PaymentMethodData.card(card).createParams(), by: client)),
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

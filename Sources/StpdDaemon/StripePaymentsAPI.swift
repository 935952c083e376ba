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
        try await client().send(StripeRequest(.post, "/v1/sources", params: params), as: Source.self)
    }

    func retrieveSource(id: String, clientSecret: String) async throws -> Source {
        try await client().send(
            StripeRequest(.get, "/v1/sources/\(id)", params: ["client_secret": .string(clientSecret)]), as: Source.self)
    }

    /// The poller keeps the SDK's schedule, so the client's own retries are off here. Of the faults
    /// without a response, only "offline" and "connection lost" are retried (at once, as the SDK
    /// does); a timeout, a refused connect, a DNS or TLS failure ends the poll with its error.
    func pollSource(id: String, clientSecret: String) async -> PollFetchResult {
        var client: StripeClient
        do { client = try self.client() } catch {
            return .transportFailure(StripeError(kind: .authentication, message: "no Stripe key is configured"))
        }
        client.retryPolicy.maxTransientRetries = 0
        client.retryPolicy.maxRateLimitRetries = 0
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
        var form = params.formParams(for: client.configuration.key.kind)
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
        try await client().send(
            StripeRequest(.post, "/v1/payment_methods", params: PaymentMethodData.card(card).createParams()),
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

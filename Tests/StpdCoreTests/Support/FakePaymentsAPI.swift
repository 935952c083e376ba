import Foundation
import JSONRPC
import StripeAPI
import Synchronization

@testable import StpdCore

/// Stripe as the Source and redirect services see it, scripted by the test: objects live in
/// dictionaries the test edits (a Source turning chargeable, a PaymentIntent succeeding).
final class FakePaymentsAPI: PaymentsAPI {
    struct State {
        var sources: [String: JSONValue] = [:]
        var intents: [String: JSONValue] = [:]
        var polls = 0
        /// Reads of each intent (`retrievePaymentIntent`).
        var intentReads: [String: Int] = [:]
        /// Refreshes of each intent (`refreshPaymentIntent`).
        var intentRefreshes: [String: Int] = [:]
        /// Every ping, and every intent read, in order (`ping:<url>`, `read:<id>`).
        var calls: [String] = []
        var created: [[String: JSONValue]] = []
    }

    let state = Mutex(State())

    /// The page Stripe sends a customer to first, on its real host: it redirects at once to the bank's.
    static func hookURL(_ id: String) -> String { "https://hooks.stripe.com/redirect/authenticate/\(id)" }

    /// A Source as Stripe returns it; `redirect` false gives flow none (a card).
    @discardableResult
    func addSource(
        id: String = "src_" + String(UUID().uuidString.prefix(8)), type: String = "sofort", status: String = "pending",
        flow: String = "redirect", returnURL: String = "myshop://stripe-redirect?redirect_merchant_name=Shop",
        details: JSONValue = [:]
    ) -> String {
        var source: [String: JSONValue] = [
            "id": .string(id), "object": "source", "type": .string(type), "status": .string(status),
            "flow": .string(flow),
            "livemode": false, "client_secret": .string("\(id)_secret"), "amount": 1099, "currency": "eur",
            "usage": "single_use", .init(stringLiteral: type): details,
        ]
        if flow == "redirect" {
            source["redirect"] = [
                "status": "pending", "url": .string(Self.hookURL(id)),
                "return_url": .string(returnURL),
            ]
        }
        state.withLock { $0.sources[id] = .object(source) }
        return id
    }

    func setSourceStatus(_ id: String, _ status: String) {
        state.withLock { s in
            if case .object(var source)? = s.sources[id] {
                source["status"] = .string(status)
                s.sources[id] = .object(source)
            }
        }
    }

    @discardableResult
    func addIntent(
        id: String = "pi_" + String(UUID().uuidString.prefix(8)), status: String = "requires_action",
        returnURL: String = "myshop://done?order=42"
    ) -> String {
        var intent: [String: JSONValue] = [
            "id": .string(id), "object": "payment_intent", "client_secret": .string("\(id)_secret_abc"),
            "status": .string(status), "amount": 1000, "currency": "eur",
        ]
        if status == "requires_action" {
            intent["next_action"] = [
                "type": "redirect_to_url",
                "redirect_to_url": [
                    "url": .string(Self.hookURL(id)), "return_url": .string(returnURL),
                ],
            ]
        }
        state.withLock { $0.intents[id] = .object(intent) }
        return "\(id)_secret_abc"
    }

    /// The intent requires `action` (`{"type": ..., <type>: {...}}`), as Stripe's confirmation leaves it.
    func setNextAction(_ id: String, _ action: JSONValue) {
        state.withLock { s in
            if case .object(var intent)? = s.intents[id] {
                intent["status"] = "requires_action"
                intent["next_action"] = action
                s.intents[id] = .object(intent)
            }
        }
    }

    func retrievals(of id: String) -> Int { state.withLock { $0.intentReads[id] ?? 0 } }
    func refreshes(of id: String) -> Int { state.withLock { $0.intentRefreshes[id] ?? 0 } }
    var calls: [String] { state.withLock { $0.calls } }

    func ping(_ url: URL) async { state.withLock { $0.calls.append("ping:\(url.absoluteString)") } }

    func refreshPaymentIntent(clientSecret: String) async throws -> PaymentIntent {
        let id = clientSecret.components(separatedBy: "_secret_")[0]
        state.withLock { $0.intentRefreshes[id, default: 0] += 1 }
        let intent = try await retrievePaymentIntent(clientSecret: clientSecret)
        state.withLock { $0.intentReads[id, default: 0] -= 1 }
        return intent
    }

    func setIntentStatus(_ id: String, _ status: String) {
        state.withLock { s in
            if case .object(var intent)? = s.intents[id] {
                intent["status"] = .string(status)
                intent["next_action"] = nil
                s.intents[id] = .object(intent)
            }
        }
    }

    private func source(_ id: String) throws -> Source {
        guard let json = state.withLock({ $0.sources[id] }) else {
            throw StripeError(kind: .invalidRequest, message: "No such source: \(id)", httpStatus: 404)
        }
        return try Source(json: json, codingPath: [])
    }

    func createSource(_ params: [String: JSONValue]) async throws -> Source {
        let id = addSource(type: params["type"]?.stringValue ?? "sofort")
        state.withLock { $0.created.append(params) }
        return try source(id)
    }

    func retrieveSource(id: String, clientSecret: String) async throws -> Source { try source(id) }

    func pollSource(id: String, clientSecret: String) async -> PollFetchResult {
        state.withLock { $0.polls += 1 }
        do { return .source(try source(id)) } catch let error as StripeError {
            return .httpError(status: 404, error)
        } catch { return .source(nil) }
    }

    func retrievePaymentIntent(clientSecret: String) async throws -> PaymentIntent {
        let id = clientSecret.components(separatedBy: "_secret_")[0]
        state.withLock {
            $0.intentReads[id, default: 0] += 1
            $0.calls.append("read:\(id)")
        }
        guard let json = state.withLock({ $0.intents[id] }) else {
            throw StripeError(kind: .invalidRequest, message: "No such payment_intent: \(id)", httpStatus: 404)
        }
        return try PaymentIntent(json: json, codingPath: [])
    }

    func confirmPaymentIntent(_ params: PaymentIntentConfirmParams) async throws -> PaymentIntent {
        try await retrievePaymentIntent(clientSecret: params.clientSecret)
    }

    /// SetupIntents live beside the PaymentIntents, under their seti_ ids.
    func retrieveSetupIntent(clientSecret: String) async throws -> SetupIntent {
        let id = clientSecret.components(separatedBy: "_secret_")[0]
        guard let json = state.withLock({ $0.intents[id] }) else {
            throw StripeError(kind: .invalidRequest, message: "No such setup_intent: \(id)", httpStatus: 404)
        }
        return try SetupIntent(json: json, codingPath: [])
    }

    func confirmSetupIntent(_ params: PaymentIntentConfirmParams) async throws -> SetupIntent {
        try await retrieveSetupIntent(clientSecret: params.clientSecret)
    }

    /// Verified: the intent as it stands (the test sets what verification made of it).
    func verifyPaymentIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> PaymentIntent {
        try await retrievePaymentIntent(clientSecret: params.clientSecret)
    }

    func verifySetupIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> SetupIntent {
        try await retrieveSetupIntent(clientSecret: params.clientSecret)
    }

    func createCardPaymentMethod(_ card: CardInput) async throws -> PaymentMethod {
        let last4 = String(card.number.filter(\.isNumber).suffix(4))
        let json: JSONValue = [
            "id": .string("pm_" + String(UUID().uuidString.prefix(8))), "object": "payment_method", "type": "card",
            "card": [
                "brand": "visa", "last4": .string(last4), "exp_month": .int(Int64(card.expMonth)),
                "exp_year": .int(Int64(card.expYear)),
            ],
        ]
        return try PaymentMethod(json: json, codingPath: [])
    }
}

/// Records the URLs it was asked to open; fails for URLs with a prefix in `failing`.
final class RecordingOpener: URLOpener {
    let opened = Mutex<[String]>([])
    let failing: [String]

    init(failing: [String] = []) { self.failing = failing }

    struct Refused: Error {}

    func open(_ url: String) async throws {
        opened.withLock { $0.append(url) }
        if failing.contains(where: url.hasPrefix) { throw Refused() }
    }
}

import Foundation
import JSONRPC
import StpdCore
import StripeAPI
import Synchronization
import Testing

/// A Stripe API that answers from a script keyed by "METHOD path" and records every request.
final class ScriptedStripe: StripeAPIClient {
    private struct State {
        var answers: [String: [Result<JSONValue, StripeError>]] = [:]
        var requests: [StripeRequest] = []
    }

    private let state = Mutex(State())

    func answer(_ route: String, _ results: Result<JSONValue, StripeError>...) {
        state.withLock { $0.answers[route, default: []].append(contentsOf: results) }
    }

    var requests: [StripeRequest] { state.withLock { $0.requests } }
    func count(_ route: String) -> Int { requests.filter { "\($0.method.rawValue) \($0.path)" == route }.count }

    func send<T: Decodable>(_ request: StripeRequest, as type: T.Type) async throws -> T {
        let route = "\(request.method.rawValue) \(request.path)"
        let result: Result<JSONValue, StripeError>? = state.withLock { s in
            s.requests.append(request)
            guard var queue = s.answers[route], !queue.isEmpty else { return nil }
            // The last answer of a route repeats.
            let next = queue.count > 1 ? queue.removeFirst() : queue[0]
            s.answers[route] = queue
            return next
        }
        guard let result else { throw StripeError(kind: .api, message: "no scripted answer for \(route)") }
        return try JSONCoding.typed(T.self, from: try result.get())
    }
}

let customerJSON: JSONValue = [
    "id": "cus_123", "object": "customer",
    "shipping": ["name": "Ada", "address": ["line1": "1 Main", "city": "Berlin", "country": "DE"]],
]

func cardJSON(_ id: String, last4: String = "4242", applePay: Bool = false) -> JSONValue {
    var card: [String: JSONValue] = ["brand": "visa", "last4": .string(last4), "exp_month": 12, "exp_year": 2030]
    if applePay { card["wallet"] = ["type": "apple_pay"] }
    return ["id": .string(id), "object": "payment_method", "type": "card", "card": .object(card)]
}

func listJSON(_ items: JSONValue...) -> JSONValue {
    ["object": "list", "data": .array(items), "has_more": false, "url": "/v1/payment_methods"]
}

/// The SDK's STPCustomerContext rules (behaviour spec section 5.4), with an injected clock.
@Suite(.timeLimit(.minutes(1)))
struct StripeCustomerContextTests {
    let stripe = ScriptedStripe()
    let clock = NowBox()
    let provider = ScriptedKeyProvider([
        .key(ephemeralKeyJSON(expiresIn: 24 * 3600)), .key(ephemeralKeyJSON(2, expiresIn: 24 * 3600)),
    ])

    func context(includeApplePay: Bool = false) -> StripeCustomerContext {
        let keys = EphemeralKeyManager(provider: provider, now: clock.clock)
        return StripeCustomerContext(keys: keys, stripe: stripe, includeApplePay: includeApplePay, now: clock.clock)
    }

    @Test func customerIsCachedFor60Seconds() async throws {
        stripe.answer("GET /v1/customers/cus_123", .success(customerJSON))
        let context = context()
        let first = try await context.retrieveCustomer()
        #expect(first.id == "cus_123")
        #expect(first.shippingAddress?.city == "Berlin")
        clock.advance(seconds: 59)
        _ = try await context.retrieveCustomer()
        #expect(stripe.count("GET /v1/customers/cus_123") == 1)
        clock.advance(seconds: 1)
        _ = try await context.retrieveCustomer()
        #expect(stripe.count("GET /v1/customers/cus_123") == 2)
    }

    @Test func requestsUseTheEphemeralKeyAndItsCustomer() async throws {
        stripe.answer("GET /v1/payment_methods", .success(listJSON(cardJSON("pm_1"))))
        _ = try await context().listPaymentMethods()
        let request = try #require(stripe.requests.first)
        #expect(request.key?.kind == .ephemeral)
        #expect(request.params == ["customer": "cus_123", "type": "card"])
    }

    @Test func prefetchSharesOneKeyFetch() async throws {
        stripe.answer("GET /v1/customers/cus_123", .success(customerJSON))
        stripe.answer("GET /v1/payment_methods", .success(listJSON(cardJSON("pm_1"))))
        let context = context()
        await context.prefetch()
        #expect(provider.calls == 1)
        #expect(context.cacheTimes.customer != nil && context.cacheTimes.paymentMethods != nil)
        _ = try await context.listPaymentMethods()
        #expect(stripe.count("GET /v1/payment_methods") == 1, "served from the prefetched cache")
    }

    @Test func applePayCardsAreHiddenUnlessAskedFor() async throws {
        stripe.answer(
            "GET /v1/payment_methods", .success(listJSON(cardJSON("pm_1"), cardJSON("pm_ap", applePay: true))))
        #expect(try await context().listPaymentMethods().map(\.id) == ["pm_1"])
        #expect(try await context(includeApplePay: true).listPaymentMethods().map(\.id) == ["pm_1", "pm_ap"])
    }

    @Test(arguments: [true, false])
    func attachAlwaysClearsThePaymentMethodCache(succeeds: Bool) async throws {
        stripe.answer("GET /v1/payment_methods", .success(listJSON(cardJSON("pm_1"))))
        stripe.answer(
            "POST /v1/payment_methods/pm_2/attach",
            succeeds
                ? .success(cardJSON("pm_2"))
                : .failure(StripeError(kind: .card, code: "card_declined", message: "declined")))
        let context = context()
        _ = try await context.listPaymentMethods()
        var failed = false
        do { try await context.attachPaymentMethod(id: "pm_2") } catch { failed = true }
        #expect(failed == !succeeds)
        let attach = try #require(stripe.requests.last)
        #expect(attach.params == ["customer": "cus_123"])
        _ = try await context.listPaymentMethods()
        #expect(stripe.count("GET /v1/payment_methods") == 2)
    }

    @Test func detachClearsThePaymentMethodCache() async throws {
        stripe.answer("GET /v1/payment_methods", .success(listJSON(cardJSON("pm_1"))))
        stripe.answer("POST /v1/payment_methods/pm_1/detach", .success(cardJSON("pm_1")))
        let context = context()
        _ = try await context.listPaymentMethods()
        try await context.detachPaymentMethod(id: "pm_1")
        #expect(context.cacheTimes.paymentMethods == nil)
    }

    @Test func shippingUpdateSendsStripeIOS23sParamsAndRefreshesTheCustomer() async throws {
        stripe.answer("POST /v1/customers/cus_123", .success(customerJSON))
        let context = context()
        let address = try StripeAddress(
            json: [
                "name": "Ada", "phone": "+49", "line1": "1 Main", "city": "Berlin", "postal_code": "10115",
                "country": "DE",
            ],
            codingPath: [])
        try await context.updateShipping(address)
        let request = try #require(stripe.requests.last)
        #expect(
            request.params["shipping"] == [
                "name": "Ada", "phone": "+49",
                "address": ["line1": "1 Main", "city": "Berlin", "postal_code": "10115", "country": "DE"],
            ])
        _ = try await context.retrieveCustomer()
        #expect(stripe.count("GET /v1/customers/cus_123") == 0, "the update's answer filled the cache")
    }

    @Test func clearCacheForcesRefetch() async throws {
        stripe.answer("GET /v1/customers/cus_123", .success(customerJSON))
        let context = context()
        _ = try await context.retrieveCustomer()
        context.clearCache()
        _ = try await context.retrieveCustomer()
        #expect(stripe.count("GET /v1/customers/cus_123") == 2)
    }

    @Test func keyErrorsSurfaceAndNothingIsSent() async throws {
        let failing = ScriptedKeyProvider([.error(BackendDown())])
        let context = StripeCustomerContext(
            keys: EphemeralKeyManager(provider: failing, now: clock.clock), stripe: stripe, now: clock.clock)
        await #expect(throws: BackendDown.self) { try await context.retrieveCustomer() }
        #expect(stripe.requests.isEmpty)
    }

    @Test func idsThatCouldEscapeThePathAreRefused() async throws {
        await #expect(throws: StripeError.self) { try await context().attachPaymentMethod(id: "../customers/cus_9") }
        #expect(stripe.requests.isEmpty)
    }
}

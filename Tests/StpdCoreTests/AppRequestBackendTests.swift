import Foundation
import JSONRPC
import StripeAPI
import Testing

@testable import StpdCore

/// The "app itself" customer adapter and ephemeral key provider: each call is one app request with
/// the operation's params, answered by the test as the app would.
@Suite(.timeLimit(.minutes(1)))
struct AppRequestBackendTests {
    let fx: AppRequestFixture
    let backend: AppCustomerBackend

    init() async throws {
        fx = try await AppRequestFixture()
        backend = AppCustomerBackend(broker: fx.broker, ownerUID: 1000, session: "cuss_app")
    }

    @Test func retrieveCustomerAsksAndDecodesTheCustomer() async throws {
        let backend = backend
        let trip = try await fx.roundTrip(result: appCustomerJSON) { try await backend.retrieveCustomer() }
        #expect(trip.pending.object["operation"] == "retrieveCustomer")
        #expect(trip.pending.object["params"] == [:])
        #expect(trip.pending.object["session"] == "cuss_app")
        #expect(trip.pending.ownerUID == 1000)
        let customer = try trip.outcome.get()
        #expect(customer.id == "cus_app")
        #expect(customer.shippingAddress?.name == "Ada")
        #expect(customer.shippingAddress?.city == "Berlin")
        #expect(customer.allResponseFields == appCustomerJSON)
    }

    @Test(arguments: [
        (["object": "customer"] as JSONValue, "missing required field id"),
        (["id": 42] as JSONValue, "id: Expected a string, found integer"),
        (["cus_1"] as JSONValue, "the result: Expected an object, found array"),
        (.null, "the result: Expected an object, found null"),
    ])
    func aMalformedCustomerNamesTheOperation(answer: JSONValue, detail: String) async throws {
        let backend = backend
        let trip = try await fx.roundTrip(result: answer) { try await backend.retrieveCustomer() }
        #expect(throws: AppRequestError.malformedAnswer(operation: "retrieveCustomer", detail: detail)) {
            try trip.outcome.get()
        }
    }

    @Test func listPaymentMethodsTakesAListAndHidesApplePay() async throws {
        let backend = backend
        let list: JSONValue = [
            "object": "list", "has_more": false,
            "data": [appCardJSON("pm_1"), appCardJSON("pm_pay", applePay: true), ["object": "payment_method"]],
        ]
        let trip = try await fx.roundTrip(result: list) { try await backend.listPaymentMethods() }
        #expect(trip.pending.object["operation"] == "listPaymentMethods")
        #expect(trip.pending.object["params"] == [:])
        // Apple Pay hidden; the entry without an id skipped, as in Stripe lists.
        #expect(try trip.outcome.get().map(\.id) == ["pm_1"])
    }

    @Test func listPaymentMethodsTakesAnArrayAndCanIncludeApplePay() async throws {
        let backend = AppCustomerBackend(broker: fx.broker, ownerUID: 1000, session: "cuss_app", includeApplePay: true)
        let answer: JSONValue = [appCardJSON("pm_1"), appCardJSON("pm_pay", applePay: true)]
        let trip = try await fx.roundTrip(result: answer) { try await backend.listPaymentMethods() }
        let methods = try trip.outcome.get()
        #expect(methods.map(\.id) == ["pm_1", "pm_pay"])
        #expect(methods.map(\.label) == ["Visa 4242", "Visa 4242"])
    }

    @Test(arguments: [
        (["object": "list"] as JSONValue, "missing required field data"),
        (["data": "pm_1"] as JSONValue, "data: Expected an array, found string"),
        ("pm_1" as JSONValue, "the result: Expected an object, found string"),
    ])
    func aMalformedListNamesTheOperation(answer: JSONValue, detail: String) async throws {
        let backend = backend
        let trip = try await fx.roundTrip(result: answer) { try await backend.listPaymentMethods() }
        let error = #expect(throws: AppRequestError.self) { try trip.outcome.get() }
        #expect(error == .malformedAnswer(operation: "listPaymentMethods", detail: detail))
        #expect("\(error!)" == "the app's answer to listPaymentMethods is not usable: \(detail)")
    }

    @Test func attachAndDetachSendThePaymentMethod() async throws {
        let backend = backend
        let attach = try await fx.roundTrip(result: appCardJSON("pm_9")) {
            try await backend.attachPaymentMethod(id: "pm_9")
        }
        try attach.outcome.get()
        #expect(attach.pending.object["operation"] == "attachPaymentMethod")
        #expect(attach.pending.object["params"] == ["paymentMethod": "pm_9"])

        let detach = try await fx.roundTrip(result: nil) { try await backend.detachPaymentMethod(id: "pm_9") }
        try detach.outcome.get()
        #expect(detach.pending.object["operation"] == "detachPaymentMethod")
        #expect(detach.pending.object["params"] == ["paymentMethod": "pm_9"])
    }

    @Test func anErrorAnswerReachesTheCaller() async throws {
        let backend = backend
        let trip = try await fx.roundTrip(
            result: nil, error: AppRequestFailure(message: "no such card", code: "missing")
        ) {
            try await backend.detachPaymentMethod(id: "pm_9")
        }
        #expect(
            throws: AppRequestError.failed(message: "no such card", code: "missing", operation: "detachPaymentMethod")
        ) { try trip.outcome.get() }
    }

    @Test func updateShippingSendsStripesShippingParams() async throws {
        let backend = backend
        let json: JSONValue = [
            "name": "Ada", "phone": "+4930123", "line1": "1 Main", "city": "Berlin", "postal_code": "10115",
            "country": "DE",
        ]
        let address = try StripeAddress(json: json)
        let trip = try await fx.roundTrip(result: appCustomerJSON) { try await backend.updateShipping(address) }
        try trip.outcome.get()
        #expect(trip.pending.object["operation"] == "updateShipping")
        #expect(
            trip.pending.object["params"] == [
                "shipping": [
                    "name": "Ada", "phone": "+4930123",
                    "address": ["line1": "1 Main", "city": "Berlin", "postal_code": "10115", "country": "DE"],
                ]
            ])
        #expect(trip.pending.object["params"]?["shipping"] == address.shippingParams)
    }

    @Test func nothingIsCached() async throws {
        let backend = backend
        _ = try await fx.roundTrip(result: appCustomerJSON) { try await backend.retrieveCustomer() }.outcome.get()
        backend.clearCache()
        let again = try await fx.roundTrip(result: ["id": "cus_other"]) { try await backend.retrieveCustomer() }
        #expect(try again.outcome.get().id == "cus_other")
    }

    @Test func anUnansweredOperationTimesOutWithItsName() async throws {
        let backend = AppCustomerBackend(broker: fx.broker, ownerUID: 1000, session: "cuss_app", timeout: .seconds(10))
        let task = Task { try await backend.listPaymentMethods() }
        #expect(try await fx.next().type == "appRequest.pending")
        await fx.clock.sleepersArrived()
        fx.clock.advance(by: .seconds(10))
        let error = await #expect(throws: AppRequestError.self) { try await task.value }
        #expect("\(error!)" == "the app did not answer listPaymentMethods within 10 s")
        #expect(try await fx.next().type == "appRequest.timedOut")
    }

    @Test func theKeyProviderAsksWithTheAPIVersion() async throws {
        let provider = AppKeyProvider(broker: fx.broker, ownerUID: 1000, session: "cuss_app")
        let key = ephemeralKeyJSON()
        let trip = try await fx.roundTrip(result: key) {
            try await provider.createCustomerKey(apiVersion: "2020-08-27")
        }
        #expect(trip.pending.object["operation"] == "createEphemeralKey")
        #expect(trip.pending.object["params"] == ["apiVersion": "2020-08-27"])
        #expect(try trip.outcome.get() == key)
        // The key's secret goes to the asker only, never into the log.
        #expect(!"\(fx.inbox.received)".contains("ek_test_secret"))
    }

    @Test func theKeyManagerGetsItsKeyFromTheApp() async throws {
        let provider = AppKeyProvider(broker: fx.broker, ownerUID: 1000, session: "cuss_app")
        let manager = EphemeralKeyManager(provider: provider, apiVersion: "2020-08-27", now: { t0 })
        let trip = try await fx.roundTrip(result: ephemeralKeyJSON(expiresIn: 3600)) { try await manager.key() }
        #expect(trip.pending.object["params"] == ["apiVersion": "2020-08-27"])
        #expect(try trip.outcome.get().customerID == "cus_123")
    }
}

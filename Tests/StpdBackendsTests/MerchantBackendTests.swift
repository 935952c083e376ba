import Foundation
import JSONRPC
import StpdBackends
import StpdCore
import StripeAPI
import StripeHTTP
import TestSupport
import Testing

// MARK: - Helpers

let token = "Bearer mbt_9f8e7d6c5b4a39281706"
let jsonHeaders: [(String, String)] = [("Content-Type", "application/json")]

/// Runs `body` with a fresh server and transport, shutting both down after.
func withServer(
    _ script: @escaping @Sendable (Int, TestHTTPServer.Received) -> TestHTTPServer.Action,
    _ body: (AsyncHTTPTransport, TestHTTPServer) async throws -> Void
) async throws {
    let server = try await TestHTTPServer.start(script)
    let transport = AsyncHTTPTransport()
    do {
        try await body(transport, server)
    } catch {
        try? await transport.shutdown()
        await server.shutdown()
        throw error
    }
    try await transport.shutdown()
    await server.shutdown()
}

/// A MerchantBackend against a fresh server whose base path is `/api/stpd/` (trailing slash on purpose).
func withBackend(
    authorization: String? = token, includeApplePay: Bool = false, timeout: Duration = .seconds(60),
    _ script: @escaping @Sendable (Int, TestHTTPServer.Received) -> TestHTTPServer.Action,
    _ body: (MerchantBackend, TestHTTPServer) async throws -> Void
) async throws {
    try await withServer(script) { transport, server in
        let backend = try MerchantBackend(
            baseURL: server.baseURL + "/api/stpd/", authorization: authorization, timeout: timeout,
            includeApplePay: includeApplePay, transport: transport)
        try await body(backend, server)
    }
}

func json(_ data: Data) throws -> JSONValue { try JSONCoding.decode(JSONValue.self, from: data) }

/// The error `operation` throws, as `E` (nil, with an issue recorded, for none or another type).
func thrown<E: Error>(_: E.Type, _ operation: () async throws -> Void) async -> E? {
    do {
        try await operation()
        Issue.record("expected \(E.self), got no error")
    } catch let error as E {
        return error
    } catch {
        Issue.record("expected \(E.self), got \(type(of: error)): \(error)")
    }
    return nil
}

let customerJSON = #"""
    {"id":"cus_123","object":"customer","email":"jenny@example.com","default_source":null,
     "shipping":{"name":"Jenny Rosen","phone":"+15555550100",
       "address":{"line1":"1 Main St","line2":null,"city":"Springfield","state":"OR","postal_code":"97477","country":"US"}},
     "sources":{"object":"list","data":[]}}
    """#

let cardJSON = #"""
    {"id":"pm_card","object":"payment_method","type":"card","customer":"cus_123",
     "card":{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2030,"wallet":null}}
    """#
let applePayJSON = #"""
    {"id":"pm_apple","object":"payment_method","type":"card","customer":"cus_123",
     "card":{"brand":"mastercard","last4":"4444","exp_month":1,"exp_year":2031,"wallet":{"type":"apple_pay","apple_pay":{}}}}
    """#
let methodsList =
    #"{"object":"list","url":"/v1/payment_methods","has_more":false,"data":[\#(cardJSON),\#(applePayJSON)]}"#
let methodsArray = "[\(cardJSON),\(applePayJSON)]"

let cardDecline = #"""
    {"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds",
     "message":"Your card has insufficient funds.","param":"","doc_url":"https://stripe.com/docs/error-codes/card-declined"}}
    """#

// MARK: - Routes

@Test func retrieveCustomerGetsTheCustomerRoute() async throws {
    try await withBackend({ _, _ in .respond(status: 200, headers: jsonHeaders, body: customerJSON) }) {
        backend, server in
        let customer = try await backend.retrieveCustomer()
        #expect(customer.id == "cus_123")
        #expect(customer.shippingAddress?.name == "Jenny Rosen")
        #expect(customer.shippingAddress?.postalCode == "97477")
        #expect(customer.allResponseFields["email"] == "jenny@example.com")

        let request = try #require(server.received.first)
        #expect(server.received.count == 1)
        #expect(request.method == "GET")
        #expect(request.uri == "/api/stpd/customer")
        #expect(request.values("Authorization") == [token])
        #expect(request.values("Accept") == ["application/json"])
        #expect(request.values("Content-Type").isEmpty)
        #expect(request.body.isEmpty)
    }
}

@Test func listPaymentMethodsAcceptsAListObject() async throws {
    try await withBackend({ _, _ in .respond(status: 200, headers: jsonHeaders, body: methodsList) }) {
        backend, server in
        let methods = try await backend.listPaymentMethods()
        // Apple Pay hidden by default.
        #expect(methods.map(\.id) == ["pm_card"])
        let request = try #require(server.received.first)
        #expect(request.method == "GET")
        #expect(request.uri == "/api/stpd/customer/payment_methods")
        #expect(request.values("Authorization") == [token])
    }
}

@Test func listPaymentMethodsAcceptsABareArray() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: methodsArray) }) { backend, _ in
        let methods = try await backend.listPaymentMethods()
        #expect(methods.map(\.id) == ["pm_card"])
    }
}

@Test func applePayCardsAreKeptWhenIncluded() async throws {
    try await withBackend(includeApplePay: true, { _, _ in .respond(status: 200, body: methodsList) }) { backend, _ in
        let methods = try await backend.listPaymentMethods()
        #expect(methods.map(\.id) == ["pm_card", "pm_apple"])
        #expect(methods[1].isApplePay)
    }
}

@Test func listWithoutDataIsADecodingError() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: #"{"object":"list"}"#) }) { backend, _ in
        let error = await thrown(StripeError.self) { _ = try await backend.listPaymentMethods() }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("missing required field data") == true)
    }
}

@Test func attachPostsToTheAttachRoute() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: cardJSON) }) { backend, server in
        try await backend.attachPaymentMethod(id: "pm_1Abc_2")
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(request.uri == "/api/stpd/customer/payment_methods/pm_1Abc_2/attach")
        #expect(request.values("Authorization") == [token])
        #expect(request.values("Content-Type") == ["application/json"])
        #expect(try json(request.body) == [:])
    }
}

@Test func detachPostsToTheDetachRoute() async throws {
    // Any 2xx, any body (here none at all).
    try await withBackend({ _, _ in .respond(status: 204) }) { backend, server in
        try await backend.detachPaymentMethod(id: "pm_9")
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(request.uri == "/api/stpd/customer/payment_methods/pm_9/detach")
        #expect(request.values("Authorization") == [token])
        #expect(request.values("Content-Type") == ["application/json"])
        #expect(try json(request.body) == [:])
    }
}

@Test func updateShippingPostsTheAddressAsJSON() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: customerJSON) }) { backend, server in
        let address = try StripeAddress(json: [
            "name": "Jenny Rosen", "line1": "1 Main St", "city": "Springfield", "postal_code": "97477",
            "country": "US",
        ])
        try await backend.updateShipping(address)
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(request.uri == "/api/stpd/customer/shipping")
        #expect(request.values("Authorization") == [token])
        #expect(request.values("Content-Type") == ["application/json"])
        // Absent fields (phone, line2, state) are omitted, not null.
        #expect(
            try json(request.body) == [
                "name": "Jenny Rosen",
                "address": ["line1": "1 Main St", "city": "Springfield", "postal_code": "97477", "country": "US"],
            ])
    }
}

@Test func noAuthorizationHeaderWhenNoneIsConfigured() async throws {
    try await withBackend(authorization: nil, { _, _ in .respond(status: 200, body: customerJSON) }) {
        backend, server in
        _ = try await backend.retrieveCustomer()
        #expect(server.received.first?.values("Authorization") == [])
    }
}

@Test(arguments: ["", "pm_1/../../admin", "pm 1", "pm_1?x=1", "pm_1%2F", "pm_é", "pm-1"])
func paymentMethodIDsOutsideTheAlphabetAreRefused(id: String) async throws {
    try await withBackend({ _, _ in .respond(status: 200) }) { backend, server in
        let attach = await thrown(StripeError.self) { try await backend.attachPaymentMethod(id: id) }
        #expect(attach?.kind == .invalidRequest)
        let detach = await thrown(StripeError.self) { try await backend.detachPaymentMethod(id: id) }
        #expect(detach?.kind == .invalidRequest)
        #expect(server.received.isEmpty)
    }
}

@Test func clearCacheIsANoOpAndNothingIsCached() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: customerJSON) }) { backend, server in
        _ = try await backend.retrieveCustomer()
        backend.clearCache()
        _ = try await backend.retrieveCustomer()
        #expect(server.received.count == 2)
    }
}

// MARK: - Errors

@Test func aRelayedStripeCardErrorIsThatStripeError() async throws {
    try await withBackend({ _, _ in
        .respond(status: 402, headers: jsonHeaders + [("Request-Id", "req_relayed")], body: cardDecline)
    }) { backend, _ in
        let error = await thrown(StripeError.self) { try await backend.attachPaymentMethod(id: "pm_1") }
        #expect(error?.kind == .card)
        #expect(error?.code == "card_declined")
        #expect(error?.cardErrorCode == .cardDeclined)
        #expect(error?.declineCode == "insufficient_funds")
        #expect(error?.message == "Your card has insufficient funds.")
        #expect(error?.httpStatus == 402)
        #expect(error?.requestID == "req_relayed")
    }
}

@Test func aStripeErrorRelayedWithA200IsStillAnError() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: cardDecline) }) { backend, _ in
        let error = await thrown(StripeError.self) { try await backend.detachPaymentMethod(id: "pm_1") }
        #expect(error?.kind == .card)
    }
}

@Test func anyOther500IsAMerchantBackendErrorWithARedactedExcerpt() async throws {
    let secret = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
    let body = """
        <html><body><h1>Internal Server Error</h1>
        <pre>StripeClient(api_key=\(secret)) failed; card 4242424242424242; header was \(token)</pre>
        </body></html>
        """
    try await withBackend({ _, _ in .respond(status: 500, headers: [("Content-Type", "text/html")], body: body) }) {
        backend, _ in
        let error = await thrown(MerchantBackendError.self) { _ = try await backend.retrieveCustomer() }
        let e = try #require(error)
        #expect(e.status == 500)
        #expect(e.method == "GET")
        #expect(e.route == "/customer")
        #expect(e.excerpt.contains("Internal Server Error"))
        #expect(!e.excerpt.contains(secret))
        #expect(!e.excerpt.contains("4eC39HqLyjWDarjtT1zdp7dc"))
        #expect(e.excerpt.contains("sk_test_…"))
        #expect(!e.excerpt.contains("4242424242424242"))
        #expect(!e.excerpt.contains("mbt_9f8e7d6c5b4a39281706"))
        #expect(!e.excerpt.contains("\n"))
        #expect(e.excerpt.count <= 201)
        #expect(e.description.contains("HTTP 500"))
        #expect(!e.description.contains(secret))
    }
}

@Test func aJSONErrorThatIsNotStripeShapedIsRedactedAsJSON() async throws {
    let body = #"{"message":"boom","client_secret":"pi_123_secret_abcdef","details":{"secret":"whatever-it-is"}}"#
    try await withBackend({ _, _ in .respond(status: 503, body: body) }) { backend, _ in
        let error = await thrown(MerchantBackendError.self) { _ = try await backend.listPaymentMethods() }
        let e = try #require(error)
        #expect(e.status == 503)
        #expect(e.route == "/customer/payment_methods")
        #expect(e.excerpt.contains("boom"))
        #expect(!e.excerpt.contains("abcdef"))
        #expect(!e.excerpt.contains("whatever-it-is"))
    }
}

@Test func aLongErrorBodyIsCut() async throws {
    try await withBackend({ _, _ in .respond(status: 502, body: String(repeating: "bad gateway ", count: 500)) }) {
        backend, _ in
        let error = await thrown(MerchantBackendError.self) { try await backend.attachPaymentMethod(id: "pm_1") }
        #expect(error?.status == 502)
        #expect(error?.excerpt.count == 201)
        #expect(error?.excerpt.hasSuffix("…") == true)
    }
}

@Test func anEmptyErrorBodyIsSaidToBeEmpty() async throws {
    try await withBackend({ _, _ in .respond(status: 404) }) { backend, _ in
        let error = await thrown(MerchantBackendError.self) { _ = try await backend.retrieveCustomer() }
        #expect(error?.status == 404)
        #expect(error?.excerpt == "(empty body)")
    }
}

@Test func a200ThatIsNotJSONIsADecodingError() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: "<html>login page</html>") }) { backend, _ in
        let error = await thrown(StripeError.self) { _ = try await backend.retrieveCustomer() }
        #expect(error?.kind == .decoding)
        #expect(error?.httpStatus == 200)
    }
}

@Test func aCustomerWithoutIDIsADecodingError() async throws {
    try await withBackend({ _, _ in .respond(status: 200, body: #"{"object":"customer"}"#) }) { backend, _ in
        let error = await thrown(StripeError.self) { _ = try await backend.retrieveCustomer() }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("missing required field id") == true)
    }
}

// MARK: - Retries

@Test func aPOSTIsNotRetriedOnADroppedConnection() async throws {
    try await withBackend({ _, _ in .close }) { backend, server in
        let error = await thrown(StripeError.self) { try await backend.attachPaymentMethod(id: "pm_1") }
        #expect(error?.kind == .connection)
        #expect(error?.message.contains("after 1 attempt") == true)
        #expect(server.received.count == 1)

        _ = await thrown(StripeError.self) { try await backend.updateShipping(try StripeAddress(json: [:])) }
        #expect(server.received.count == 2)
    }
}

@Test func aGETIsRetriedOnceOnADroppedConnection() async throws {
    try await withBackend({ index, _ in index == 0 ? .close : .respond(status: 200, body: customerJSON) }) {
        backend, server in
        let customer = try await backend.retrieveCustomer()
        #expect(customer.id == "cus_123")
        #expect(server.received.count == 2)
        #expect(server.received.map(\.uri) == ["/api/stpd/customer", "/api/stpd/customer"])
        #expect(server.received[1].values("Authorization") == [token])
    }
}

@Test func aGETIsRetriedOnlyOnce() async throws {
    try await withBackend({ _, _ in .close }) { backend, server in
        let error = await thrown(StripeError.self) { _ = try await backend.listPaymentMethods() }
        #expect(error?.kind == .connection)
        #expect(error?.message.contains("after 2 attempt") == true)
        #expect(server.received.count == 2)
    }
}

@Test func aGETThatTimesOutIsNotRetried() async throws {
    try await withBackend(timeout: .milliseconds(300), { _, _ in .hang }) { backend, server in
        let error = await thrown(StripeError.self) { _ = try await backend.retrieveCustomer() }
        #expect(error?.kind == .connection)
        #expect(server.received.count == 1)
    }
}

@Test func aGETIsNotRetriedAfterAnHTTPError() async throws {
    try await withBackend({ _, _ in .respond(status: 503, body: "busy") }) { backend, server in
        _ = await thrown(MerchantBackendError.self) { _ = try await backend.retrieveCustomer() }
        #expect(server.received.count == 1)
    }
}

@Test func aRefusedConnectionIsAConnectionError() async throws {
    // A port that was just listening and is now closed.
    let server = try await TestHTTPServer.start { _, _ in .close }
    let url = server.baseURL
    await server.shutdown()
    let transport = AsyncHTTPTransport()
    let backend = try? MerchantBackend(baseURL: url, authorization: token, transport: transport)
    let error = await thrown(StripeError.self) { _ = try await #require(backend).retrieveCustomer() }
    #expect(error?.kind == .connection)
    #expect(error?.message.contains("mbt_9f8e7d6c5b4a39281706") == false)
    try await transport.shutdown()
}

// MARK: - Configuration

@Test func descriptionNeverShowsTheAuthorizationValue() throws {
    let backend = try MerchantBackend(
        baseURL: "https://shop.example.com/api/", authorization: token, transport: AsyncHTTPTransportStub())
    #expect(backend.baseURL == "https://shop.example.com/api")
    #expect(!"\(backend)".contains("mbt_"))
    #expect(!String(reflecting: backend).contains("mbt_"))
}

/// A transport that must not be used (for configuration tests).
struct AsyncHTTPTransportStub: StripeHTTPTransport {
    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        Issue.record("unexpected request \(request.method) \(request.url)")
        return HTTPResponseData(status: 500)
    }
}

import Foundation
import JSONRPC
import StripeAPI
import Testing

let testPK = StripeKey("pk_test_51HxYzAbCdEfGhIjKlMn1234")!

func testConfiguration(baseURL: String = "https://api.stripe.com") -> StripeConfiguration {
    StripeConfiguration(key: testPK, baseURL: baseURL, userAgent: StripeUserAgent(bindingsVersion: "0.1.0"))
}

@Test func keyKindsAndModes() {
    #expect(StripeKey("pk_live_abc")?.kind == .publishable)
    #expect(StripeKey("sk_test_abc")?.kind == .secret)
    #expect(StripeKey("rk_live_abc")?.kind == .restricted)
    #expect(StripeKey("ek_test_YWNjdF8x")?.kind == .ephemeral)
    #expect(StripeKey("pk_live_abc")?.mode == .live)
    #expect(StripeKey("ek_test_abc")?.mode == .test)
    for bad in ["", "pk", "pk_", "xx_test_abc", "pktest", "pk_test_a b", "PK_test_abc"] {
        #expect(StripeKey(bad) == nil, "\(bad)")
    }
}

@Test func keysPrintRedacted() {
    let key = StripeKey("sk_live_51HxYzAbCdEfGhIjKlMn9876")!
    #expect("\(key)" == "sk_live_…9876")
    #expect(String(describing: key) == "sk_live_…9876")
    #expect(String(reflecting: key) == "StripeKey(sk_live_…9876)")
    var dumped = ""
    dump(key, to: &dumped)
    #expect(!dumped.contains("AbCdEf"))
    #expect("\([key])".contains("sk_live_…9876"))
    #expect(!"\([key])".contains("AbCdEf"))
    // Too short to show a tail without revealing most of it.
    #expect("\(StripeKey("pk_test_abc")!)" == "pk_test_…")
    // No mode segment: only the two-letter prefix is kept.
    #expect(StripeKey.redact("ek_YWNjdF8xSDBhbGxvd2VkX3NlY3JldA") == "ek_…JldA")
}

@Test func postHeadersAndBody() {
    let request = StripeRequest(.post, "/v1/sources", params: ["type": "card", "card": ["number": "4242"]])
    let http = testConfiguration().httpRequest(for: request, idempotencyKey: "idem-1")
    #expect(http.method == "POST")
    #expect(http.url == "https://api.stripe.com/v1/sources")
    #expect(http.body == Data("card[number]=4242&type=card".utf8))
    #expect(http.headers["authorization"] == "Bearer pk_test_51HxYzAbCdEfGhIjKlMn1234")
    #expect(http.headers["Stripe-Version"] == "2020-08-27")
    #expect(http.headers["Content-Type"] == "application/x-www-form-urlencoded")
    #expect(http.headers["Content-Length"] == "27")
    #expect(http.headers["Idempotency-Key"] == "idem-1")
    #expect(http.headers["Stripe-Account"] == nil)
    #expect(http.headers["X-Stripe-User-Agent"] == #"{"bindings_version":"0.1.0","lang":"swift","publisher":"stpd"}"#)
    #expect(http.timeout == .seconds(30))
}

@Test func getUsesQueryAndNoBodyOrIdempotencyKey() {
    let ek = StripeKey("ek_test_secretsecret")!
    let request = StripeRequest(
        .get, "v1/customers/cus_1", params: ["expand": ["default_source"]], key: ek, stripeAccount: "acct_1")
    let http = testConfiguration(baseURL: "http://127.0.0.1:12111/").httpRequest(for: request, idempotencyKey: "x")
    #expect(http.url == "http://127.0.0.1:12111/v1/customers/cus_1?expand[0]=default_source")
    #expect(http.body == nil)
    #expect(http.headers["Authorization"] == "Bearer ek_test_secretsecret")
    #expect(http.headers["Stripe-Account"] == "acct_1")
    #expect(http.headers["Idempotency-Key"] == nil)
    #expect(http.headers["Content-Type"] == nil)
}

@Test func configurationAccountAndExtraHeadersOverride() {
    var config = testConfiguration()
    config.stripeAccount = "acct_default"
    let request = StripeRequest(.delete, "/v1/x", extraHeaders: ["stripe-version": "2020-08-27; beta=v1"])
    let http = config.httpRequest(for: request, idempotencyKey: nil)
    #expect(http.headers["Stripe-Account"] == "acct_default")
    #expect(http.headers["Stripe-Version"] == "2020-08-27; beta=v1")
    #expect(http.headers.fields.filter { $0.name.lowercased() == "stripe-version" }.count == 1)
}

@Test func userAgentFields() {
    let ua = StripeUserAgent(
        bindingsVersion: "1.2.3", osVersion: "Linux 6.1",
        application: .init(name: "shop", version: "2.0", url: "https://shop.example", partnerID: "pp_1"))
    #expect(
        ua.headerValue
            == #"{"application":{"name":"shop","partner_id":"pp_1","url":"https://shop.example","version":"2.0"},"#
            + #""bindings_version":"1.2.3","lang":"swift","os_version":"Linux 6.1","publisher":"stpd"}"#)
}

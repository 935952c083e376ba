import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdDaemon

/// The SDK names itself (`payment_user_agent`) on what makes a Source or a PaymentMethod; stpd
/// sends its own name and version there, with a publishable key as the SDK does, and a new
/// PaymentMethod's `allow_redisplay` with it.
@Suite struct PaymentUserAgentTests {
    private struct NoTransport: StripeHTTPTransport {
        func send(_ request: HTTPRequestData) async throws -> HTTPResponseData { HTTPResponseData(status: 500) }
    }

    private func client(_ key: String) -> StripeClient {
        StripeClient(
            configuration: StripeConfiguration(
                key: StripeKey(key)!, userAgent: StripeUserAgent(bindingsVersion: StpdAPI.version)),
            transport: NoTransport())
    }

    private let confirm = PaymentIntentConfirmParams(
        clientSecret: "pi_1_secret_2", paymentMethodData: .ideal(bank: "ing"), returnURL: "myshop://done")

    @Test func aPublishableKeySendsStpdsNameAndVersion() {
        let publishable = client("pk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq")
        let signal = JSONValue.string("stpd/\(StpdAPI.version)")
        #expect(StripePaymentsAPI.signed(["type": "sofort"], by: publishable)["payment_user_agent"] == signal)
        let form = StripePaymentsAPI.confirmForm(confirm, by: publishable)
        #expect(form["payment_method_data"]?["payment_user_agent"] == signal)
        #expect(form["payment_user_agent"] == nil)
        // A new PaymentMethod says allow_redisplay, as STPPaymentMethodParams always does; a raw type's own wins.
        #expect(form["payment_method_data"]?["allow_redisplay"] == "unspecified")
        #expect(
            StripePaymentsAPI.newPaymentMethod(["type": "card"], by: publishable)["allow_redisplay"] == "unspecified")
        #expect(
            StripePaymentsAPI.newPaymentMethod(["type": "satispay", "allow_redisplay": "always"], by: publishable)[
                "allow_redisplay"] == "always")
        // A Source is no PaymentMethod.
        #expect(StripePaymentsAPI.signed(["type": "sofort"], by: publishable)["allow_redisplay"] == nil)
    }

    @Test func aServerKeySendsNone() {
        let secret = client("sk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq")
        #expect(StripePaymentsAPI.signed(["type": "sofort"], by: secret) == ["type": "sofort"])
        #expect(StripePaymentsAPI.confirmForm(confirm, by: secret)["payment_method_data"]?["payment_user_agent"] == nil)
        #expect(StripePaymentsAPI.confirmForm(confirm, by: secret)["payment_method_data"]?["allow_redisplay"] == nil)
    }
}

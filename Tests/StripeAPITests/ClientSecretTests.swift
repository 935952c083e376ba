import Testing

@testable import StripeAPI

@Suite struct ClientSecretTests {
    @Test func matchesOnlyTheSameSecret() {
        #expect(ClientSecret.matches("pi_1_secret_abc", "pi_1_secret_abc"))
        #expect(!ClientSecret.matches("pi_1_secret_abd", "pi_1_secret_abc"))
        #expect(!ClientSecret.matches("pi_1_secret_ab", "pi_1_secret_abc"))
        #expect(!ClientSecret.matches("pi_1_secret_abcd", "pi_1_secret_abc"))
        #expect(!ClientSecret.matches("", "pi_1_secret_abc"))
        #expect(!ClientSecret.matches("pi_1_secret_abc", nil))
        // A length difference of 256 bytes must not wrap to "no difference".
        #expect(!ClientSecret.matches(String(repeating: "a", count: 256), ""))
    }

    @Test func theIntentAClientSecretBelongsTo() {
        #expect(ClientSecret.intentID(of: "pi_3Abc_secret_XyZ") == "pi_3Abc")
        #expect(ClientSecret.intentID(of: "seti_1Q_secret_abc") == "seti_1Q")
        #expect(ClientSecret.intentID(of: "pi_3Abc_scoped_secret_XyZ") == "pi_3Abc")
        #expect(ClientSecret.intentID(of: "pi_3Abc") == "pi_3Abc")
    }

    /// A wrong secret under a server key is answered as Stripe answers an id it does not know.
    @Test func aWrongSecretIsStripesUnknownID() {
        let error = StripeError.noSuchObject(.paymentIntent, id: "pi_1", requestID: "req_1")
        #expect(error.kind == .invalidRequest && error.httpStatus == 404)
        #expect(error.rpcData["code"] == "resource_missing" && error.rpcData["param"] == "intent")
        #expect(error.message == "No such payment_intent: 'pi_1'")
        #expect(StripeError.noSuchObject(.setupIntent, id: "seti_1").message == "No such setupintent: 'seti_1'")
        #expect(StripeError.noSuchObject(.source, id: "src_1").rpcData["param"] == "id")
    }
}

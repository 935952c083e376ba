import JSONRPC
import Testing

@testable import StripeAPI

@Test func keysKeepPrefixAndLastFour() {
    let text = "Authorization: Bearer sk_live_51HxYzAbCdEfGhIjKlMn9876 and pk_test_51HxYzAbCdEfGhIjKlMn1234."
    #expect(Redaction.redact(text) == "Authorization: Bearer sk_live_…9876 and pk_test_…1234.")
    #expect(
        Redaction.redact("x=rk_test_abcdefgh&y=ek_test_YWNjdF8xSDBhbGxvd2VkX3NlY3JldA")
            == "x=rk_test_…&y=ek_test_…JldA")
    #expect(Redaction.redact("task_test_1 desk_live_2 sk_") == "task_test_1 desk_live_2 sk_")
}

@Test func clientSecretsKeepTheObjectID() {
    #expect(
        Redaction.redact("GET /v1/payment_intents/pi_3Abc?client_secret=pi_3Abc_secret_XyZ123&expand[0]=x")
            == "GET /v1/payment_intents/pi_3Abc?client_secret=pi_3Abc_secret_[REDACTED]&expand[0]=x")
    #expect(
        Redaction.redact("seti_1Q_secret_abc src_client_secret_Zx9")
            == "seti_1Q_secret_[REDACTED] src_client_secret_[REDACTED]")
}

@Test func cardDataInFormsAndJSONText() {
    #expect(
        Redaction.redact("card[cvc]=123&card[exp_month]=12&card[number]=4242424242424242&type=card")
            == "card[cvc]=[REDACTED]&card[exp_month]=12&card[number]=[REDACTED]&type=card")
    #expect(Redaction.redact("card%5Bnumber%5D=4242") == "card%5Bnumber%5D=[REDACTED]")
    #expect(
        Redaction.redact(#"{"number": "4000 0000 0000 3220","cvc":123}"#)
            == #"{"number":"[REDACTED]","cvc":"[REDACTED]"}"#)
    #expect(Redaction.redact("pan 4242424242424242, ts 1700000000001") == "pan ••••4242, ts 1700000000001")
}

@Test func jsonRemovesCardFieldsAndMasksSecrets() {
    let params: JSONValue = [
        "type": "card",
        "card": ["number": "4242424242424242", "cvc": "123", "exp_month": 12],
        "client_secret": "pi_1_secret_abc",
        "ephemeral_key": ["id": "ephkey_1", "secret": "opaque"],
        "items": [["note": "key sk_test_abcdefghijklmnopqrstu"]],
    ]
    #expect(
        Redaction.redact(params) == [
            "type": "card", "card": ["exp_month": 12], "client_secret": "pi_1_secret_[REDACTED]",
            "ephemeral_key": ["id": "ephkey_1", "secret": "[REDACTED]"],
            "items": [["note": "key sk_test_…rstu"]],
        ])
}

@Test func aPasswordInAURLIsMasked() {
    let masked = Redaction.redact("STPD_DATABASE_URL=postgresql://stpd:hunter2@db.example/fleet")
    #expect(!masked.contains("hunter2"))
    #expect(masked.hasPrefix("STPD_DATABASE_URL=postgresql://stpd:"))
    #expect(masked.hasSuffix("@db.example/fleet"))
    #expect(Redaction.redact("postgresql://stpd@/fleet?host=/run") == "postgresql://stpd@/fleet?host=/run")
}

/// The quick check that lets most texts skip the regexes must never skip one that holds a secret.
@Test(arguments: [
    "/v1/sources/src_1?client_secret=src_client_secret_abc", "pi_1_secret_xyz", "Bearer sk_test_abcd", "SK_LIVE_abcd",
    "card[number]=4242424242424242", "{\"cvc\":\"123\"}", "4242424242424242", "postgresql://u:pw@host/db",
])
func aTextThatHoldsASecretIsAlwaysChecked(_ text: String) {
    #expect(Redaction.mayHoldSecret(text))
    #expect(Redaction.redact(text) != text)
}

@Test func aPlainPathSkipsTheRegexes() {
    #expect(!Redaction.mayHoldSecret("/v1/sources/src_1JXyz0123456789"))
    #expect(Redaction.redact("/v1/sources/src_1JXyz0123456789") == "/v1/sources/src_1JXyz0123456789")
}

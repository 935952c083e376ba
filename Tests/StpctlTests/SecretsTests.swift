import JSONRPC
import StpctlKit
import Testing

struct SecretsTests {
    /// Issue 24.6: client secrets inside URLs (and any other text) are redacted too, keeping the id.
    @Test func secretNamedStringMembersAndClientSecretsInURLsAreRedactedAtAnyDepth() {
        let reply: JSONValue = [
            "clientSecret": "src_client_secret_1",
            "source": [
                "id": "src_1", "client_secret": "src_client_secret_1",
                "redirect": ["url": "https://hooks.stripe.com/x?client_secret=src_client_secret_1"],
            ],
            "adapter": ["authorization": "Bearer t0ken", "keyProvider": ["Authorization": "Bearer k"]],
            "items": [["secret": "s"], ["secret": .null]],
        ]
        let expected: JSONValue = [
            "clientSecret": "[REDACTED]",
            "source": [
                "id": "src_1", "client_secret": "[REDACTED]",
                "redirect": ["url": "https://hooks.stripe.com/x?client_secret=src_client_secret_[REDACTED]"],
            ],
            "adapter": ["authorization": "[REDACTED]", "keyProvider": ["Authorization": "[REDACTED]"]],
            "items": [["secret": "[REDACTED]"], ["secret": .null]],
        ]
        #expect(Secrets.redacted(reply) == expected)
    }
}

struct SecretsInTextTests {
    @Test func clientSecretsInHumanOutputKeepOnlyTheirObjectID() {
        let text = """
            redirect      pending https://hooks.stripe.com/redirect/authenticate/src_1AB?client_secret=src_client_secret_Zx9
            next action   https://hooks.stripe.com/3d_secure?payment_intent_client_secret=pi_3Q_secret_k4y&x=1
            """
        let redacted = Secrets.redacted(text: text)
        #expect(!redacted.contains("Zx9") && !redacted.contains("k4y"))
        #expect(redacted.contains("client_secret=src_client_secret_[REDACTED]"))
        #expect(redacted.contains("payment_intent_client_secret=pi_3Q_secret_[REDACTED]&x=1"))
        #expect(redacted.contains("src_1AB"))
    }
}

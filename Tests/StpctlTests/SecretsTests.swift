import JSONRPC
import StpctlKit
import Testing

struct SecretsTests {
    @Test func secretNamedStringMembersAreRedactedAtAnyDepthAndURLsAreKept() {
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
                "redirect": ["url": "https://hooks.stripe.com/x?client_secret=src_client_secret_1"],
            ],
            "adapter": ["authorization": "[REDACTED]", "keyProvider": ["Authorization": "[REDACTED]"]],
            "items": [["secret": "[REDACTED]"], ["secret": .null]],
        ]
        #expect(Secrets.redacted(reply) == expected)
    }
}

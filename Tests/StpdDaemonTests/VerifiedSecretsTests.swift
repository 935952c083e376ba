import Testing

@testable import StpdDaemon

@Suite struct VerifiedSecretsTests {
    @Test func remembersOnlyTheExactPair() {
        let verified = VerifiedSecrets()
        verified.remember(id: "pi_1", secret: "pi_1_secret_a")
        #expect(verified.contains(id: "pi_1", secret: "pi_1_secret_a"))
        #expect(!verified.contains(id: "pi_1", secret: "pi_1_secret_b"))
        #expect(!verified.contains(id: "pi_2", secret: "pi_1_secret_a"))
    }

    @Test func isBoundedOldestFirst() {
        let verified = VerifiedSecrets()
        for i in 0...VerifiedSecrets.capacity { verified.remember(id: "pi_\(i)", secret: "s\(i)") }
        #expect(!verified.contains(id: "pi_0", secret: "s0"))
        #expect(verified.contains(id: "pi_1", secret: "s1"))
        #expect(verified.contains(id: "pi_\(VerifiedSecrets.capacity)", secret: "s\(VerifiedSecrets.capacity)"))
    }
}

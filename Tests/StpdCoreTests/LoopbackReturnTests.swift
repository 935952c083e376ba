import Foundation
import Testing

@testable import StpdCore

@Suite("LoopbackReturn")
struct LoopbackReturnTests {
    @Test func tokensAreLongRandomAndURLSafe() {
        let tokens = (0..<200).map { _ in LoopbackReturn(port: 4242, instance: "i", appName: nil).token }
        #expect(Set(tokens).count == tokens.count)
        for token in tokens {
            // 256 bits in base64url without padding: 43 characters.
            #expect(token.utf8.count == 43)
            #expect(LoopbackReturn.token(inPath: "/return/\(token)") == token)
        }
    }

    @Test func theURLIsLoopbackAndItsTokenIsFoundInAReturn() throws {
        let issued = LoopbackReturn(port: 4242, instance: "i", appName: "Shop")
        #expect(issued.url == "http://127.0.0.1:4242/return/\(issued.token)")
        let back = issued.url + "?payment_intent=pi_1&redirect_status=succeeded"
        #expect(LoopbackReturn.token(in: back) == issued.token)
        // Not a loopback return: another host, scheme or path, or a token of the wrong form.
        for url in [
            "http://localhost:4242/return/\(issued.token)", "https://127.0.0.1:4242/return/\(issued.token)",
            "http://127.0.0.1/return/\(issued.token)", "http://127.0.0.1:4242/back/\(issued.token)",
            "http://127.0.0.1:4242/return/short", "http://127.0.0.1:4242/return/\(issued.token)/x",
            "http://127.0.0.1:4242/return/\(issued.token.dropLast(2))%2F", "myshop://return/\(issued.token)",
        ] {
            #expect(LoopbackReturn.token(in: url) == nil, "\(url)")
        }
    }

    @Test func matchingComparesTheWholeToken() {
        let issued = LoopbackReturn(port: 1, instance: "i", appName: nil)
        #expect(issued.matches(issued.token))
        #expect(!issued.matches(String(issued.token.dropLast()) + (issued.token.hasSuffix("A") ? "B" : "A")))
        #expect(!issued.matches(String(issued.token.dropLast())))
        #expect(!issued.matches(""))
    }

    /// Filed under a hash, never under itself: the store's index never holds the token.
    @Test func itsLookupKeyHidesTheToken() {
        let issued = LoopbackReturn(port: 1, instance: "i", appName: nil)
        #expect(!issued.lookupKey.contains(issued.token))
        #expect(issued.lookupKey == LoopbackReturn.lookupKey(issued.token))
        #expect(issued.lookupKey != LoopbackReturn(port: 1, instance: "i", appName: nil).lookupKey)
    }
}

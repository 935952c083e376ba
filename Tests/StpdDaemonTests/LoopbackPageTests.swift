import Crypto
import Foundation
import StpdProtocol
import Testing

@testable import StpdCore
@testable import StpdDaemon

/// The loopback return's page: what the customer reads, escaped, with nothing that could run.
@Suite struct LoopbackPageTests {
    static func outcome(_ result: String, _ verdict: IntentResult?, _ error: Failure? = nil) -> RedirectOutcome {
        RedirectOutcome(result: result, intentResult: verdict, error: error, object: nil, at: "2026-01-01T00:00:00Z")
    }

    @Test func authorisedNamesTheApp() {
        let page = LoopbackPage(
            LoopbackVisit(
                arrival: .completed, kind: "paymentIntent", appName: "Kiosk",
                outcome: Self.outcome("succeeded", .succeeded)))
        #expect(page.status.code == 200)
        #expect(page.message == "Payment authorised: you can close this window and return to Kiosk.")
        let setup = LoopbackPage(
            LoopbackVisit(
                arrival: .completed, kind: "setupIntent", appName: nil, outcome: Self.outcome("succeeded", .succeeded)))
        #expect(setup.message == "Payment method authorised: you can close this window and return to the app.")
    }

    @Test func failuresSayWhatFailedAndAReloadSaysItWasUsed() {
        let declined = Failure.domain(.paymentFailed(detail: "Your card was declined.", data: [:]))
        let page = LoopbackPage(
            LoopbackVisit(
                arrival: .earlier, kind: "paymentIntent", appName: "Kiosk",
                outcome: Self.outcome("requires_payment_method", .failed, declined)))
        #expect(page.message.hasPrefix("This return link was used before; nothing was changed. Payment failed: "))
        #expect(page.message.contains("return to Kiosk."))
        let source = LoopbackPage(
            LoopbackVisit(arrival: .completed, kind: "source", appName: "Kiosk", outcome: Self.outcome("pending", nil)))
        #expect(source.title == "Payment pending")
        let unknown = LoopbackPage(LoopbackVisit(arrival: .unknown))
        #expect(unknown.status.code == 404 && unknown.message.contains("Nothing was changed"))
    }

    @Test func theAppNameIsEscapedAndNothingRuns() throws {
        let page = LoopbackPage(
            LoopbackVisit(
                arrival: .completed, kind: "paymentIntent", appName: "<script>alert(1)</script> & Co",
                outcome: Self.outcome("succeeded", .succeeded)))
        #expect(!page.html.contains("<script>"))
        #expect(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co"))
        // The one inline style is the one the policy allows, by hash; nothing else may load.
        let hash = Data(SHA256.hash(data: Data(LoopbackPage.style.utf8))).base64EncodedString()
        #expect(LoopbackPage.contentSecurityPolicy.contains("style-src 'sha256-\(hash)'"))
        #expect(LoopbackPage.contentSecurityPolicy.hasPrefix("default-src 'none';"))
        #expect(page.html.contains("<style>\(LoopbackPage.style)</style>"))
    }
}

import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdDaemon

/// The card metadata request as the SDK's `STPBINRange.retrieve` sends it, and its answer read.
@Suite struct StripeCardMetadataTests {
    /// Answers every request with `body` and keeps the URLs asked.
    private final class Transport: StripeHTTPTransport, @unchecked Sendable {
        let body: String
        private let lock = NSLock()
        private var asked: [String] = []
        init(_ body: String) { self.body = body }
        var urls: [String] { lock.withLock { asked } }

        func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
            lock.withLock { asked.append(request.method + " " + request.url) }
            return HTTPResponseData(status: 200, body: Data(body.utf8))
        }
    }

    private func client(_ key: String, _ transport: Transport) -> StripeClient {
        StripeClient(
            configuration: StripeConfiguration(
                key: StripeKey(key)!, userAgent: StripeUserAgent(bindingsVersion: StpdAPI.version)),
            transport: transport)
    }

    @Test func asksWithThePublishableKeyAndReadsTheRanges() async throws {
        let transport = Transport(
            #"{"data": [{"brand": "UNIONPAY", "pan_length": 19, "account_range_low": "6205500000000000000", "#
                + #""account_range_high": "6205509999999999999", "country": "CN"}, {"brand": "VISA"}]}"#)
        let key = "pk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq"
        let source = try #require(StripeCardMetadata(client(key, transport)))
        let ranges = try await source.ranges(binPrefix: "620550")
        #expect(
            ranges == [
                .init(low: "6205500000000000000", high: "6205509999999999999", panLength: 19, brand: .unionPay)
            ])
        let url = try #require(transport.urls.first)
        #expect(url.hasPrefix("GET https://api.stripe.com/edge-internal/card-metadata?"))
        #expect(url.contains("key=\(key)") && url.contains("bin_prefix=620550"))
    }

    @Test func noSourceWithoutAPublishableKey() {
        #expect(StripeCardMetadata(client("sk_test_51HbQxLKj2s9dFh3kPzR7yT0vWq", Transport("{}"))) == nil)
        #expect(StripeCardMetadata(nil) == nil)
    }

    @Test func theServicesBrandNames() {
        let names: [(String, CardBrand)] = [
            ("VISA", .visa), ("AMERICAN_EXPRESS", .amex), ("MASTERCARD", .mastercard), ("DISCOVER", .discover),
            ("JCB", .jcb), ("DINERS_CLUB", .dinersClub), ("UNIONPAY", .unionPay),
            ("CARTES_BANCAIRES", .cartesBancaires), ("SOMETHING_NEW", .unknown),
        ]
        for (name, brand) in names { #expect(StripeCardMetadata.brand(name) == brand, "\(name)") }
    }
}

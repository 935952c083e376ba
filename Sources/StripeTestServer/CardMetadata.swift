import Foundation
import JSONRPC

extension StripeTestState {
    /// Test mode's account ranges that the bundled ones do not know: Stripe's 19-digit UnionPay
    /// test card, 6205500000000000004.
    static let cardMetadataRanges: [String: [JSONValue]] = [
        "620550": [
            .object([
                "account_range_low": "6205500000000000000", "account_range_high": "6205509999999999999",
                "brand": "UNIONPAY", "country": "CN", "funding": "CREDIT", "pan_length": 19,
            ])
        ]
    ]

    /// `GET /edge-internal/card-metadata?key=pk_…&bin_prefix=NNNNNN` (the SDK's
    /// `STPBINRange.retrieve`): the ranges for a six-digit prefix, none for one test mode does not
    /// know. `key` must be the publishable key the request is made with.
    func cardMetadata(_ call: inout Call) throws(APIError) -> JSONValue {
        guard let key = call.string("key") else { throw .missing("key") }
        guard key == configuration.publishableKey else { throw .invalid("Invalid API Key provided", param: "key") }
        guard let prefix = call.string("bin_prefix") else { throw .missing("bin_prefix") }
        guard prefix.count == 6, prefix.allSatisfy(\.isASCII), prefix.allSatisfy(\.isNumber) else {
            throw .invalid("bin_prefix must be six digits", param: "bin_prefix")
        }
        return .object(["data": .array(Self.cardMetadataRanges[prefix] ?? [])])
    }
}

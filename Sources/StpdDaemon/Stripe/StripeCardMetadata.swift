import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// The SDK's `STPBINRange.retrieve(forPrefix:)`: `GET /edge-internal/card-metadata` with the
/// publishable key as `key` and the six-digit `bin_prefix`, answering
/// `{"data": [{"brand", "pan_length", "account_range_low", "account_range_high", …}]}`.
struct StripeCardMetadata: CardMetadataSource {
    let client: StripeClient

    /// Nil unless the configured key is publishable: the service takes no other (the SDK always has one).
    init?(_ client: StripeClient?) {
        guard let client, client.configuration.key.kind == .publishable else { return nil }
        self.client = client
    }

    func ranges(binPrefix: String) async throws -> [CardMetadataRange] {
        let params: [String: JSONValue] = [
            "key": .string(client.configuration.key.secret), "bin_prefix": .string(binPrefix),
        ]
        let answer = try await client.send(StripeRequest(.get, "/edge-internal/card-metadata", params: params))
        return (answer["data"]?.arrayValue ?? []).compactMap { row in
            guard let low = row["account_range_low"]?.stringValue, let high = row["account_range_high"]?.stringValue,
                let length = row["pan_length"]?.intValue.flatMap({ Int(exactly: $0) })
            else { return nil }
            return CardMetadataRange(
                low: low, high: high, panLength: length, brand: Self.brand(row["brand"]?.stringValue ?? ""))
        }
    }

    /// The service's brand names (`VISA`, `AMERICAN_EXPRESS`, `UNIONPAY`, …), as `STPCard.brand(from:)` reads them.
    static func brand(_ name: String) -> CardBrand {
        switch name.lowercased().filter(\.isLetter) {
        case "visa": .visa
        case "amex", "americanexpress": .amex
        case "mastercard": .mastercard
        case "discover": .discover
        case "jcb": .jcb
        case "diners", "dinersclub": .dinersClub
        case "unionpay": .unionPay
        case "cartesbancaires": .cartesBancaires
        default: .unknown
        }
    }
}

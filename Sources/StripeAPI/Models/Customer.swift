import Foundation
import JSONRPC

/// A Customer, decoded as the SDK's `STPCustomer` (spec §5.4).
///
/// Required: `id`. `shippingAddress` comes from `shipping.address` (with `shipping.name` and
/// `shipping.phone` folded in) and is nil without an address object. The legacy `sources.data`
/// list keeps the entries the SDK would decode (`object` "card" with id, last4, brand, exp_month and
/// exp_year; `object` "source" that decodes as a `Source`); the rest are skipped.
public struct Customer: StripeModel, Hashable {
    /// One entry of the legacy `sources` list.
    public struct LegacySource: Sendable, Hashable {
        public enum Kind: String, Sendable, Hashable { case card, source }

        public var id: String
        public var kind: Kind
        /// Set for `kind == .source`.
        public var source: Source?
        /// A card whose `tokenization_method` is `apple_pay` (for a Source, its card details').
        public var isApplePayCard: Bool
        public var allResponseFields: JSONValue

        /// Nil for what the SDK skips.
        init?(json: JSONValue, codingPath: [any CodingKey]) {
            guard let f = try? ModelFields(json, codingPath: codingPath) else { return nil }
            switch f.string("object") {
            case "card"?:
                guard let id = f.string("id"), f.string("last4") != nil, f.string("brand") != nil,
                    f.int("exp_month") != nil, f.int("exp_year") != nil
                else { return nil }
                self.id = id
                kind = .card
                source = nil
                isApplePayCard = f.string("tokenization_method") == "apple_pay"
            case "source"?:
                guard let source = try? Source(json: json, codingPath: codingPath) else { return nil }
                id = source.id
                kind = .source
                self.source = source
                isApplePayCard = source.isApplePayCard
            default:
                return nil
            }
            allResponseFields = json
        }
    }

    public var id: String
    public var shippingAddress: StripeAddress?
    /// Every decodable legacy source, Apple Pay cards included; see `sources(includingApplePay:)`.
    public var allSources: [LegacySource]
    /// `default_source` as sent: an id, or an expanded object's id.
    public var defaultSourceID: String?
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        id = try f.requireString("id")
        if let shipping = f.object("shipping"),
            let shippingFields = try? ModelFields(shipping, codingPath: f.path("shipping")),
            var address = shippingFields.model("address", as: StripeAddress.self)
        {
            address.name = shippingFields.string("name")
            address.phone = shippingFields.string("phone")
            shippingAddress = address
        } else {
            shippingAddress = nil
        }
        var sources: [LegacySource] = []
        if let list = f.object("sources"), let data = list["data"]?.arrayValue {
            for (index, entry) in data.enumerated() {
                let path = f.path("sources") + [ModelKey("data"), ModelKey(intValue: index)!]
                if let source = LegacySource(json: entry, codingPath: path) { sources.append(source) }
            }
        }
        allSources = sources
        defaultSourceID = f.idOrExpanded("default_source")
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }

    /// The SDK's `sources`: Apple Pay cards hidden unless `includingApplePay` (the SDK's
    /// `includeApplePayPaymentMethods`, default false).
    public func sources(includingApplePay: Bool = false) -> [LegacySource] {
        includingApplePay ? allSources : allSources.filter { !$0.isApplePayCard }
    }

    /// The SDK's `defaultSource`: the listed source whose id is `default_source`, among those
    /// `sources(includingApplePay:)` keeps; nil when it is not in the list.
    public func defaultSource(includingApplePay: Bool = false) -> LegacySource? {
        guard let defaultSourceID else { return nil }
        return sources(includingApplePay: includingApplePay).first { $0.id == defaultSourceID }
    }
}

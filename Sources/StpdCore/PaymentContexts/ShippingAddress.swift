import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

extension ShippingAddressParams {
    /// With the recipient folded in, as the SDK's STPAddress carries it.
    public var stripeAddress: StripeAddress {
        var json: [String: JSONValue] = [:]
        for (key, value) in [
            ("name", name), ("phone", phone), ("email", email), ("line1", address.line1), ("line2", address.line2),
            ("city", address.city), ("state", address.state), ("postal_code", address.postalCode),
            ("country", address.country),
        ] {
            if let value { json[key] = .string(value) }
        }
        // Every member is optional, so decoding an object of strings cannot fail.
        return try! StripeAddress(json: .object(json), codingPath: [])
    }

    public init(_ address: StripeAddress) {
        self.init(
            name: address.name, phone: address.phone, email: address.email,
            address: .init(
                line1: address.line1, line2: address.line2, city: address.city, state: address.state,
                postalCode: address.postalCode, country: address.country))
    }

    /// The SDK's required-shipping-fields check (`STPAddress.containsRequiredShippingAddressFields`).
    func contains(requiredFields fields: [String]) -> Bool {
        fields.allSatisfy { field in
            switch field {
            case "name": return !(name ?? "").isEmpty
            case "emailAddress": return AddressFields.isEmailAddress(email ?? "")
            case "phoneNumber": return AddressFields.isPhoneNumber(phone ?? "", country: address.country)
            case "postalAddress":
                let country = address.country ?? ""
                return !(address.line1 ?? "").isEmpty && !(address.city ?? "").isEmpty && !country.isEmpty
                    && (country != "US" || !(address.state ?? "").isEmpty)
                    && AddressFields.postalCodeState(address.postalCode ?? "", country: country) == .valid
            default: return true
            }
        }
    }
}

/// Minor units as the SDK converts them: ×100 except the zero-decimal currencies.
enum CurrencyAmounts {
    static let zeroDecimal: Set<String> = [
        "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "vnd", "vuv", "xaf", "xof", "xpf",
    ]

    static func decimal(_ minor: Int, currency: String) -> String {
        if zeroDecimal.contains(currency.lowercased()) { return String(minor) }
        let sign = minor < 0 ? "-" : ""
        let value = abs(minor)
        let cents = value % 100
        return "\(sign)\(value / 100).\(cents < 10 ? "0" : "")\(cents)"
    }
}

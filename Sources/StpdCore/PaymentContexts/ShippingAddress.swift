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
            case "emailAddress": return Self.isEmail(email ?? "")
            case "phoneNumber": return Self.isPhone(phone ?? "", country: address.country)
            case "postalAddress":
                let country = (address.country ?? "").uppercased()
                return !(address.line1 ?? "").isEmpty && !(address.city ?? "").isEmpty && !country.isEmpty
                    && (country != "US" || !(address.state ?? "").isEmpty)
                    && Self.isPostalCode(address.postalCode ?? "", country: country)
            default: return true
            }
        }
    }

    static func isEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && parts[1].contains(".") && !parts[1].hasSuffix(".")
            && !text.contains(" ")
    }

    /// US numbers have 10 digits; elsewhere any number will do (as STPPhoneNumberValidator).
    static func isPhone(_ text: String, country: String?) -> Bool {
        let digits = text.filter(\.isNumber)
        return (country ?? "US").uppercased() == "US" ? digits.count == 10 : !digits.isEmpty
    }

    /// US: 5 or 9 digits; countries without postal codes: anything; elsewhere: not empty.
    static func isPostalCode(_ code: String, country: String) -> Bool {
        if country == "US" {
            let digits = code.filter(\.isNumber)
            return (digits.count == 5 || digits.count == 9) && code.allSatisfy { $0.isNumber || $0 == "-" }
        }
        if noPostalCode.contains(country) { return true }
        return !code.trimmingCharacters(in: .whitespaces).isEmpty
    }

    static let noPostalCode: Set<String> = [
        "AE", "AG", "AN", "AO", "AW", "BF", "BI", "BJ", "BO", "BS", "BW", "BZ", "CD", "CF", "CG", "CI", "CK", "CM",
        "DJ",
        "DM", "ER", "FJ", "GD", "GH", "GM", "GN", "GQ", "GY", "HK", "IE", "JM", "KE", "KI", "KM", "KN", "KP", "LC",
        "ML",
        "MO", "MR", "MS", "MU", "MW", "NR", "NU", "PA", "QA", "RW", "SB", "SC", "SL", "SO", "SR", "ST", "SY", "TF",
        "TK",
        "TL", "TO", "TT", "TV", "TZ", "UG", "VU", "YE", "ZA", "ZW",
    ]
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

import Foundation
import JSONRPC
import StpdValues
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
    func contains(requiredFields fields: [String]) -> Bool { missing(requiredFields: fields).isEmpty }

    /// What fails that check: each required field (`phoneNumber`) with the members it judged that
    /// are not valid (`phone`; `address.postalCode`, ...), as the SDK's form would mark them.
    func missing(requiredFields fields: [String]) -> [(field: String, members: [String])] {
        fields.compactMap { field in
            let members: [String]
            switch field {
            case "name": members = (name ?? "").isEmpty ? ["name"] : []
            case "emailAddress": members = AddressFields.isEmailAddress(email ?? "") ? [] : ["email"]
            case "phoneNumber":
                members = AddressFields.isPhoneNumber(phone ?? "", country: address.country) ? [] : ["phone"]
            case "postalAddress":
                let country = address.country ?? ""
                let postalCode = AddressFields.postalCodeState(address.postalCode ?? "", country: country)
                members = [
                    ("line1", !(address.line1 ?? "").isEmpty), ("city", !(address.city ?? "").isEmpty),
                    ("state", country != "US" || !(address.state ?? "").isEmpty),
                    ("postalCode", postalCode == .valid), ("country", !country.isEmpty),
                ].filter { !$0.1 }.map { "address.\($0.0)" }
            default: members = []
            }
            return members.isEmpty ? nil : (field, members)
        }
    }
}

import Foundation
import JSONRPC

/// Parameters for `POST /v1/sources`, as the SDK's `STPSourceParams` builds and encodes them
/// (spec §6.4): fields at the top level (no root object name), nil values omitted, and
/// `additionalAPIParameters` merged over them last.
public struct SourceParams: Sendable, Hashable {
    /// The raw type string (`sofort`, `three_d_secure`, …); the SDK's default is "".
    public var type: String
    /// In the currency's minor unit.
    public var amount: Int?
    public var currency: String?
    /// `.unknown` is omitted, as the SDK's `flowString` gives nil for it.
    public var flow: Source.Flow?
    public var metadata: [String: String]?
    public var owner: [String: JSONValue]?
    /// `return_url` here gets the `redirect_merchant_name` query item when encoded.
    public var redirect: [String: JSONValue]?
    public var token: String?
    /// `.unknown` is omitted.
    public var usage: Source.Usage?
    /// Merged at the top level, replacing a same-named field (not merged into it).
    public var additionalAPIParameters: [String: JSONValue]

    public init(
        type: String = "", amount: Int? = nil, currency: String? = nil, flow: Source.Flow? = nil,
        metadata: [String: String]? = nil, owner: [String: JSONValue]? = nil, redirect: [String: JSONValue]? = nil,
        token: String? = nil, usage: Source.Usage? = nil, additionalAPIParameters: [String: JSONValue] = [:]
    ) {
        self.type = type
        self.amount = amount
        self.currency = currency
        self.flow = flow
        self.metadata = metadata
        self.owner = owner
        self.redirect = redirect
        self.token = token
        self.usage = usage
        self.additionalAPIParameters = additionalAPIParameters
    }

    /// The form parameters for `FormEncoder`. With a non-empty `merchantName` and a `redirect.return_url`
    /// that parses, `redirect_merchant_name=<name>` is appended to the return URL unless it already has
    /// one, so hooks.stripe.com can name the app when the automatic return fails.
    public func formParams(merchantName: String?) -> [String: JSONValue] {
        var out: [String: JSONValue] = ["type": .string(type)]
        out["amount"] = amount.map { .int(Int64($0)) }
        out["currency"] = currency.map(JSONValue.string)
        if let flow, flow != .unknown { out["flow"] = .string(flow.rawValue) }
        out["metadata"] = metadata.map { .object($0.mapValues(JSONValue.string)) }
        out["owner"] = owner.map(JSONValue.object)
        if var redirect {
            if let name = merchantName, !name.isEmpty, let url = redirect["return_url"]?.stringValue,
                let named = Self.appendingMerchantName(name, to: url)
            {
                redirect["return_url"] = .string(named)
            }
            out["redirect"] = .object(redirect)
        }
        out["token"] = token.map(JSONValue.string)
        if let usage, usage != .unknown { out["usage"] = .string(usage.rawValue) }
        out.merge(additionalAPIParameters) { _, additional in additional }
        return out
    }

    /// `url` with the query item added; nil when it does not parse or already names a merchant.
    static func appendingMerchantName(_ name: String, to url: String) -> String? {
        guard let parsed = URL.strict(url),
            var components = URLComponents(url: parsed, resolvingAgainstBaseURL: false),
            !(components.queryItems ?? []).contains(where: { $0.name == "redirect_merchant_name" })
        else { return nil }
        // `&`, `=`, `+` and `#` would change the query's meaning, so they are escaped with the rest.
        let allowed = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&=+#"))
        let value = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let existing = components.percentEncodedQuery.flatMap { $0.isEmpty ? nil : $0 }
        components.percentEncodedQuery = [existing, "redirect_merchant_name=\(value)"].compactMap { $0 }.joined(
            separator: "&")
        return components.string
    }
}

/// Card details, as the SDK's `STPCardParams` (the fields a Source or PaymentMethod takes).
public struct CardInput: Codable, Sendable, Hashable, CustomStringConvertible {
    public var number: String
    public var expMonth: Int
    public var expYear: Int
    public var cvc: String?
    public var name: String?
    public var addressLine1: String?
    public var addressLine2: String?
    public var city: String?
    public var state: String?
    public var zip: String?
    public var country: String?

    public init(
        number: String, expMonth: Int, expYear: Int, cvc: String? = nil, name: String? = nil,
        addressLine1: String? = nil, addressLine2: String? = nil, city: String? = nil, state: String? = nil,
        zip: String? = nil, country: String? = nil
    ) {
        self.number = number
        self.expMonth = expMonth
        self.expYear = expYear
        self.cvc = cvc
        self.name = name
        self.addressLine1 = addressLine1
        self.addressLine2 = addressLine2
        self.city = city
        self.state = state
        self.zip = zip
        self.country = country
    }

    /// Only the last four digits, so a value that ends up in a log or an error message leaks nothing.
    public var description: String { "CardInput(••••\(number.suffix(4)), \(expMonth)/\(expYear))" }

    /// `card[number|cvc|exp_month|exp_year]`: the only keys the SDK copies into a card Source.
    var cardFields: [String: JSONValue] {
        var card: [String: JSONValue] = [
            "number": .string(number), "exp_month": .int(Int64(expMonth)), "exp_year": .int(Int64(expYear)),
        ]
        card["cvc"] = cvc.map(JSONValue.string)
        return card
    }

    /// The address under Stripe's names, only the fields given.
    var address: [String: JSONValue] {
        let pairs: [(String, String?)] = [
            ("line1", addressLine1), ("line2", addressLine2), ("city", city), ("state", state),
            ("postal_code", zip), ("country", country),
        ]
        return compact(pairs)
    }
}

/// One line of a Klarna order; `amount` is the line's total (the SDK's `totalAmount`), not a unit price.
public struct KlarnaLineItem: Codable, Sendable, Hashable {
    public enum ItemType: String, Codable, Sendable { case sku, tax, shipping }
    public var type: ItemType
    public var description: String
    public var quantity: Int
    public var amount: Int

    public init(type: ItemType, description: String, quantity: Int, amount: Int) {
        self.type = type
        self.description = description
        self.quantity = quantity
        self.amount = amount
    }
}

/// What Klarna may offer a US customer (`klarna[custom_payment_methods]`).
public enum KlarnaPaymentMethod: String, Codable, Sendable, Hashable { case payin4, installments }

/// The billing address Klarna takes, with the contact fields the SDK reads from `STPAddress`.
public struct KlarnaAddress: Codable, Sendable, Hashable {
    public var line1: String?
    public var line2: String?
    public var city: String?
    public var state: String?
    public var postalCode: String?
    public var country: String?
    public var email: String?
    public var phone: String?

    public init(
        line1: String? = nil, line2: String? = nil, city: String? = nil, state: String? = nil,
        postalCode: String? = nil, country: String? = nil, email: String? = nil, phone: String? = nil
    ) {
        self.line1 = line1
        self.line2 = line2
        self.city = city
        self.state = state
        self.postalCode = postalCode
        self.country = country
        self.email = email
        self.phone = phone
    }
}

public struct DateOfBirth: Codable, Sendable, Hashable {
    public var day: Int
    public var month: Int
    public var year: Int
    public init(day: Int, month: Int, year: Int) {
        self.day = day
        self.month = month
        self.year = year
    }
}

// MARK: - The SDK's constructors (spec §6.4 table)

extension SourceParams {
    public static func bancontact(amount: Int, name: String, returnURL: String, statementDescriptor: String? = nil)
        -> SourceParams
    {
        namedRedirect(
            "bancontact", amount: amount, name: name, returnURL: returnURL, statementDescriptor: statementDescriptor)
    }

    public static func giropay(amount: Int, name: String, returnURL: String, statementDescriptor: String? = nil)
        -> SourceParams
    {
        namedRedirect(
            "giropay", amount: amount, name: name, returnURL: returnURL, statementDescriptor: statementDescriptor)
    }

    /// Bancontact and giropay: EUR, the holder's name, and `<type>[statement_descriptor]` when given.
    private static func namedRedirect(
        _ type: String, amount: Int, name: String, returnURL: String, statementDescriptor: String?
    ) -> SourceParams {
        var params = SourceParams(
            type: type, amount: amount, currency: "eur", owner: ["name": .string(name)], redirect: returnTo(returnURL))
        if let statementDescriptor {
            params.additionalAPIParameters = [type: ["statement_descriptor": .string(statementDescriptor)]]
        }
        return params
    }

    /// The owner's address is always sent, even empty (the encoder then writes nothing for it).
    public static func card(_ card: CardInput) -> SourceParams {
        var owner: [String: JSONValue] = ["address": .object(card.address)]
        owner["name"] = card.name.map(JSONValue.string)
        return SourceParams(type: "card", owner: owner, additionalAPIParameters: ["card": .object(card.cardFields)])
    }

    /// Name, statement descriptor and bank count only when non-empty.
    public static func ideal(
        amount: Int, name: String? = nil, returnURL: String, statementDescriptor: String? = nil, bank: String? = nil
    ) -> SourceParams {
        var params = SourceParams(type: "ideal", amount: amount, currency: "eur", redirect: returnTo(returnURL))
        if let name, !name.isEmpty { params.owner = ["name": .string(name)] }
        let ideal = compact([("statement_descriptor", nonEmpty(statementDescriptor)), ("bank", nonEmpty(bank))])
        if !ideal.isEmpty { params.additionalAPIParameters = ["ideal": .object(ideal)] }
        return params
    }

    /// The owner's address holds only the parts given and is left out when none is.
    public static func sepaDebit(
        name: String, iban: String, addressLine1: String? = nil, city: String? = nil, postalCode: String? = nil,
        country: String? = nil
    ) -> SourceParams {
        var owner: [String: JSONValue] = ["name": .string(name)]
        let address = compact([
            ("line1", addressLine1), ("city", city), ("postal_code", postalCode), ("country", country),
        ])
        if !address.isEmpty { owner["address"] = .object(address) }
        return SourceParams(
            type: "sepa_debit", currency: "eur", owner: owner,
            additionalAPIParameters: ["sepa_debit": ["iban": .string(iban)]])
    }

    public static func sofort(amount: Int, returnURL: String, country: String, statementDescriptor: String? = nil)
        -> SourceParams
    {
        let sofort = compact([("country", country), ("statement_descriptor", statementDescriptor)])
        return SourceParams(
            type: "sofort", amount: amount, currency: "eur", redirect: returnTo(returnURL),
            additionalAPIParameters: ["sofort": .object(sofort)])
    }

    /// The amount is the sum of the items' totals. Owner, first and last name go only when the
    /// address is in `purchaseCountry` and line1, postal code, city, email and both names are all
    /// given (as in the SDK), since Klarna rejects partial data instead of asking for the rest.
    public static func klarna(
        returnURL: String, currency: String, purchaseCountry: String, items: [KlarnaLineItem],
        customPaymentMethods: [KlarnaPaymentMethod] = [], billingAddress: KlarnaAddress? = nil,
        firstName: String? = nil, lastName: String? = nil, dateOfBirth: DateOfBirth? = nil
    ) -> SourceParams {
        var params = SourceParams(
            type: "klarna", amount: items.reduce(0) { $0 + $1.amount }, currency: currency,
            redirect: returnTo(returnURL))
        var klarna: [String: JSONValue] = ["product": "payment", "purchase_country": .string(purchaseCountry)]
        if let address = billingAddress, address.country == purchaseCountry, let line1 = address.line1,
            let postalCode = address.postalCode, let city = address.city, let email = address.email,
            let firstName, let lastName
        {
            klarna["first_name"] = .string(firstName)
            klarna["last_name"] = .string(lastName)
            var owner: [String: JSONValue] = ["email": .string(email)]
            owner["phone"] = address.phone.map(JSONValue.string)
            owner["address"] = .object(
                compact([
                    ("line1", line1), ("line2", address.line2), ("city", city), ("state", address.state),
                    ("postal_code", postalCode), ("country", address.country),
                ]))
            params.owner = owner
        }
        if let dob = dateOfBirth {
            klarna["owner_dob_day"] = .string(twoDigits(dob.day))
            klarna["owner_dob_month"] = .string(twoDigits(dob.month))
            klarna["owner_dob_year"] = .string(String(dob.year))
        }
        // Fixed order whatever the input order, as the SDK writes it.
        let methods = [KlarnaPaymentMethod.payin4, .installments].filter(customPaymentMethods.contains)
        if !methods.isEmpty {
            klarna["custom_payment_methods"] = .string(methods.map(\.rawValue).joined(separator: ","))
        }
        let orderItems: [JSONValue] = items.map {
            [
                "type": .string($0.type.rawValue), "description": .string($0.description),
                "quantity": .int(Int64($0.quantity)), "amount": .int(Int64($0.amount)), "currency": .string(currency),
            ]
        }
        params.additionalAPIParameters = [
            "klarna": .object(klarna), "source_order": ["items": .array(orderItems)], "flow": "redirect",
        ]
        return params
    }

    public static func threeDSecure(amount: Int, currency: String, returnURL: String, card: String) -> SourceParams {
        SourceParams(
            type: "three_d_secure", amount: amount, currency: currency, redirect: returnTo(returnURL),
            additionalAPIParameters: ["three_d_secure": ["card": .string(card)]])
    }

    /// The SDK sends the app's bundle id and version when both are known; a daemon has neither
    /// unless the caller says.
    public static func alipay(
        amount: Int, currency: String, returnURL: String, appBundleID: String? = nil, appVersion: String? = nil
    ) -> SourceParams {
        var params = SourceParams(type: "alipay", amount: amount, currency: currency, redirect: returnTo(returnURL))
        if let appBundleID, let appVersion {
            params.additionalAPIParameters = [
                "alipay": ["app_bundle_id": .string(appBundleID), "app_version_key": .string(appVersion)]
            ]
        }
        return params
    }

    public static func alipayReusable(currency: String, returnURL: String) -> SourceParams {
        SourceParams(type: "alipay", currency: currency, redirect: returnTo(returnURL), usage: .reusable)
    }

    public static func p24(amount: Int, currency: String, email: String, name: String? = nil, returnURL: String)
        -> SourceParams
    {
        SourceParams(
            type: "p24", amount: amount, currency: currency, owner: compact([("email", email), ("name", name)]),
            redirect: returnTo(returnURL))
    }

    public static func visaCheckout(callID: String) -> SourceParams {
        SourceParams(type: "card", additionalAPIParameters: ["card": ["visa_checkout": ["callid": .string(callID)]]])
    }

    public static func masterpass(cartID: String, transactionID: String) -> SourceParams {
        SourceParams(
            type: "card",
            additionalAPIParameters: [
                "card": ["masterpass": ["cart_id": .string(cartID), "transaction_id": .string(transactionID)]]
            ])
    }

    /// Unlike bancontact and giropay, the statement descriptor is top-level, not under `eps`.
    public static func eps(amount: Int, name: String, returnURL: String, statementDescriptor: String? = nil)
        -> SourceParams
    {
        var params = SourceParams(
            type: "eps", amount: amount, currency: "eur", owner: ["name": .string(name)], redirect: returnTo(returnURL))
        if let descriptor = nonEmpty(statementDescriptor) {
            params.additionalAPIParameters = ["statement_descriptor": .string(descriptor)]
        }
        return params
    }

    public static func multibanco(amount: Int, returnURL: String, email: String) -> SourceParams {
        SourceParams(
            type: "multibanco", amount: amount, currency: "eur", owner: ["email": .string(email)],
            redirect: returnTo(returnURL))
    }

    /// No redirect: WeChat Pay returns through the WeChat app, to `<appID>://pay/`.
    public static func wechatPay(amount: Int, currency: String, appID: String, statementDescriptor: String? = nil)
        -> SourceParams
    {
        let wechat = compact([("appid", appID), ("statement_descriptor", nonEmpty(statementDescriptor))])
        return SourceParams(
            type: "wechat", amount: amount, currency: currency, additionalAPIParameters: ["wechat": .object(wechat)])
    }

    private static func returnTo(_ url: String) -> [String: JSONValue] { ["return_url": .string(url)] }

    private static func twoDigits(_ n: Int) -> String { n < 10 && n >= 0 ? "0\(n)" : String(n) }
}

/// The given (non-nil) values as JSON strings.
func compact(_ pairs: [(String, String?)]) -> [String: JSONValue] {
    var out: [String: JSONValue] = [:]
    for (key, value) in pairs { out[key] = value.map(JSONValue.string) }
    return out
}

func nonEmpty(_ s: String?) -> String? { s?.isEmpty == false ? s : nil }

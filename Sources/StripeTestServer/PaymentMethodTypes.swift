import Foundation
import JSONRPC

/// The PaymentMethod types besides card: the hash each object carries for its type (the `stripe`
/// package 16.1.0's `PaymentMethod` shapes) and the params Stripe refuses it without.
extension StripeTestState {
    /// Every type a PaymentMethod can be made with here, card apart, with the fields of its own hash
    /// that Stripe requires (`payment_method_data[<type>][<field>]`).
    static let paymentMethodTypes: [String: [String]] = [
        "affirm": [], "alma": [], "billie": [], "crypto": [], "kr_card": [], "naver_pay": [], "pay_by_bank": [],
        "payco": [], "satispay": [], "sunbit": [],
        "afterpay_clearpay": [], "alipay": [], "amazon_pay": [], "au_becs_debit": ["account_number", "bsb_number"],
        "bacs_debit": ["account_number", "sort_code"], "bancontact": [], "blik": [], "boleto": ["tax_id"],
        "cashapp": [], "customer_balance": [], "eps": [], "fpx": ["bank"], "giropay": [], "grabpay": [],
        "ideal": [], "klarna": [], "konbini": [], "mobilepay": [], "multibanco": [], "oxxo": [], "p24": [],
        "paynow": [], "paypal": [], "pix": [], "promptpay": [], "revolut_pay": [], "sepa_debit": ["iban"],
        "sofort": ["country"], "swish": [], "twint": [], "upi": [], "us_bank_account": [], "wechat_pay": [],
        "zip": [],
    ]

    /// The billing details Stripe refuses each type without (its guide for the type), as paths under
    /// `billing_details`.
    static let requiredBillingDetails: [String: [[String]]] = {
        let name = [["name"]]
        let email = [["email"]]
        let address = [["address", "line1"], ["address", "postal_code"], ["address", "country"]]
        return [
            "bancontact": name, "giropay": name, "eps": name, "us_bank_account": name, "p24": email,
            "multibanco": email, "promptpay": email, "sepa_debit": name + email, "au_becs_debit": name + email,
            "oxxo": name + email, "konbini": name + email, "klarna": email + [["address", "country"]],
            "bacs_debit": name + email + address, "afterpay_clearpay": name + email + address,
            "boleto": name + email + address + [["address", "city"], ["address", "state"]],
        ]
    }()

    /// Checks what `type` requires in `data` and returns the hash the PaymentMethod object carries.
    /// `name` spells a param for errors (`payment_method_data[boleto][tax_id]`).
    func paymentMethodDetails(
        _ type: String, _ data: Obj, name: ([String]) -> String
    ) throws(APIError) -> JSONValue {
        let given = data[type]?.objectValue ?? [:]
        for field in Self.paymentMethodTypes[type] ?? [] where given[field]?.stringValue?.isEmpty ?? true {
            throw .missing(name([type, field]))
        }
        for path in Self.requiredBillingDetails[type] ?? [] {
            var value: JSONValue? = data["billing_details"]
            for key in path { value = value?[key] }
            if value?.stringValue?.isEmpty ?? true { throw .missing(name(["billing_details"] + path)) }
        }
        func last4(_ number: String) -> JSONValue { .string(String(number.suffix(4))) }
        func fingerprint(_ value: String) -> JSONValue { .string(TestCard(number: value).fingerprint) }
        switch type {
        case "ideal": return ["bank": given["bank"] ?? .null, "bic": .null]
        case "sofort": return ["country": given["country"] ?? .null]
        case "eps", "p24": return ["bank": given["bank"] ?? .null]
        case "fpx":
            return ["account_holder_type": given["account_holder_type"] ?? "individual", "bank": given["bank"]!]
        case "sepa_debit":
            let iban = given["iban"]!.stringValue!
            guard iban.count >= 8 else { throw .invalid("Invalid IBAN", param: name([type, "iban"])) }
            return [
                "bank_code": "37040044", "branch_code": "", "country": .string(String(iban.prefix(2)).uppercased()),
                "fingerprint": fingerprint(iban), "generated_from": ["charge": .null, "setup_attempt": .null],
                "last4": last4(iban),
            ]
        case "bacs_debit":
            let account = given["account_number"]!.stringValue!
            return ["fingerprint": fingerprint(account), "last4": last4(account), "sort_code": given["sort_code"]!]
        case "au_becs_debit":
            let account = given["account_number"]!.stringValue!
            return ["bsb_number": given["bsb_number"]!, "fingerprint": fingerprint(account), "last4": last4(account)]
        case "us_bank_account": return try usBankAccount(given, name: name)
        case "boleto": return ["tax_id": given["tax_id"]!]
        case "blik": return ["buyer_id": .null]
        case "cashapp": return ["buyer_id": .null, "cashtag": .null]
        case "paypal": return ["country": .null, "payer_email": .null, "payer_id": .null]
        case "klarna": return ["dob": given["dob"] ?? .null]
        case "upi": return ["vpa": given["vpa"] ?? .null]
        case "pix": return ["fingerprint": .null]
        default: return [:]
        }
    }

    /// A hand-entered US account: a routing number whose ABA check digit holds (`110000000` is
    /// Stripe's test bank) and an account number; Financial Connections accounts are not served here.
    private func usBankAccount(_ given: Obj, name: ([String]) -> String) throws(APIError) -> JSONValue {
        guard let routing = given["routing_number"]?.stringValue, !routing.isEmpty else {
            throw .missing(name(["us_bank_account", "routing_number"]))
        }
        guard let account = given["account_number"]?.stringValue, !account.isEmpty else {
            throw .missing(name(["us_bank_account", "account_number"]))
        }
        let digits = routing.compactMap(\.wholeNumberValue)
        let weights = [3, 7, 1, 3, 7, 1, 3, 7, 1]
        guard routing.count == 9, digits.count == 9, zip(digits, weights).map(*).reduce(0, +) % 10 == 0 else {
            throw .invalid("Invalid routing number", param: name(["us_bank_account", "routing_number"]))
        }
        let holder = given["account_holder_type"]?.stringValue ?? "individual"
        guard ["individual", "company"].contains(holder) else {
            throw .invalid("Invalid account_holder_type", param: name(["us_bank_account", "account_holder_type"]))
        }
        return [
            "account_holder_type": .string(holder), "account_type": given["account_type"] ?? "checking",
            "bank_name": "STRIPE TEST BANK", "financial_connections_account": .null,
            "fingerprint": .string(TestCard(number: account).fingerprint), "last4": .string(String(account.suffix(4))),
            "networks": ["preferred": "ach", "supported": ["ach"]], "routing_number": .string(routing),
            "status_details": .null,
        ]
    }
}

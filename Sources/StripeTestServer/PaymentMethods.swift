import Foundation
import JSONRPC

extension StripeTestState {
    /// Validates card params (`card[number|exp_month|exp_year|cvc]` or `card[token]`) and returns
    /// the card with its expiry. `prefix` names the params in errors (`card` or `payment_method_data[card]`).
    func parseCard(_ card: Obj?, prefix: String) throws(APIError) -> (TestCard, Int64, Int64) {
        guard let card else { throw .missing("\(prefix)[number]") }
        if let token = card["token"]?.stringValue {
            guard let number = TestCard.shortcut(token) else {
                throw .notFound("token", token, param: "\(prefix)[token]")
            }
            return (
                TestCard(number: number), 12, Int64(Calendar(identifier: .gregorian).component(.year, from: Date()) + 3)
            )
        }
        guard let number = card["number"]?.stringValue, !number.isEmpty else { throw .missing("\(prefix)[number]") }
        guard let monthText = card["exp_month"]?.stringValue, !monthText.isEmpty else {
            throw .missing("\(prefix)[exp_month]")
        }
        guard let yearText = card["exp_year"]?.stringValue, !yearText.isEmpty else {
            throw .missing("\(prefix)[exp_year]")
        }
        guard let month = Int64(monthText) else {
            throw .invalid("Invalid integer: \(monthText)", param: "\(prefix)[exp_month]")
        }
        guard var year = Int64(yearText) else {
            throw .invalid("Invalid integer: \(yearText)", param: "\(prefix)[exp_year]")
        }
        let testCard = TestCard(number: number)
        guard TestCard.luhnValid(testCard.number) else {
            throw .card(code: "incorrect_number", message: "Your card number is incorrect.", param: "\(prefix)[number]")
        }
        guard (1...12).contains(month) else {
            throw .card(
                code: "invalid_expiry_month", message: "Your card's expiration month is invalid.",
                param: "\(prefix)[exp_month]")
        }
        if year < 100 { year += 2000 }
        let comps = Calendar(identifier: .gregorian).dateComponents(
            in: TimeZone(identifier: "UTC")!, from: Date(timeIntervalSince1970: TimeInterval(now)))
        let thisYear = Int64(comps.year ?? 2026)
        let thisMonth = Int64(comps.month ?? 1)
        if year < thisYear || year > thisYear + 50 || (year == thisYear && month < thisMonth) {
            throw .card(
                code: "invalid_expiry_year", message: "Your card's expiration year is invalid.",
                param: "\(prefix)[exp_year]")
        }
        if let cvc = card["cvc"]?.stringValue, !cvc.isEmpty, !(3...4).contains(cvc.count) || Int(cvc) == nil {
            throw .card(code: "invalid_cvc", message: "Your card's security code is invalid.", param: "\(prefix)[cvc]")
        }
        return (testCard, month, year)
    }

    static func billingDetails(_ input: Obj?) -> JSONValue {
        [
            "address": addressObject(input?["address"]?.objectValue),
            "email": input?["email"]?.stringValue.map(JSONValue.string) ?? .null,
            "name": input?["name"]?.stringValue.map(JSONValue.string) ?? .null,
            "phone": input?["phone"]?.stringValue.map(JSONValue.string) ?? .null,
            "tax_id": input?["tax_id"]?.stringValue.map(JSONValue.string) ?? .null,
        ]
    }

    /// Creates and stores a PaymentMethod from `type`, `card[...]`/`<type>[...]`, `billing_details`,
    /// `metadata` (all read from `data`; `prefix` names params in errors).
    func makePaymentMethod(_ data: Obj, prefix: String?) throws(APIError) -> Obj {
        func name(_ k: String) -> String { prefix.map { "\($0)[\(k)]" } ?? k }
        guard let type = data["type"]?.stringValue, !type.isEmpty else { throw .missing(name("type")) }
        let id = IDs.make("pm_")
        var pm: Obj = [
            "id": .string(id), "object": "payment_method", "allow_redisplay": "unspecified",
            "billing_details": Self.billingDetails(data["billing_details"]?.objectValue),
            "created": .int(Int64(now)), "customer": .null, "livemode": false,
            "metadata": Self.mergeMetadata(nil, data["metadata"]), "type": .string(type),
        ]
        if type == "card" {
            let (card, month, year) = try parseCard(data["card"]?.objectValue, prefix: name("card"))
            pm["card"] = [
                "brand": .string(card.brand),
                "checks": [
                    "address_line1_check": .null, "address_postal_code_check": .null,
                    "cvc_check": data["card"]?["cvc"] == nil ? .null : "unchecked",
                ],
                "country": .string(card.country), "display_brand": .string(card.brand),
                "exp_month": .int(month), "exp_year": .int(year), "fingerprint": .string(card.fingerprint),
                "funding": .string(card.funding), "generated_from": .null, "last4": .string(card.last4),
                "networks": ["available": [.string(card.brand)], "preferred": .null],
                "regulated_status": "unregulated",
                "three_d_secure_usage": ["supported": true], "wallet": .null,
            ]
            paymentMethodCards[id] = card
        } else if Self.paymentMethodTypes[type] != nil {
            pm[type] = try paymentMethodDetails(type, data) { ParamSpec.display((prefix.map { [$0] } ?? []) + $0) }
        } else {
            throw .invalid(
                "Invalid type: must be one of card, \(Self.paymentMethodTypes.keys.sorted().joined(separator: ", "))",
                param: name("type"))
        }
        paymentMethods[id] = pm
        nextSeq(id)
        return pm
    }

    /// An existing PaymentMethod, or a fresh one for a `pm_card_visa`-style shortcut.
    func resolvePaymentMethod(_ id: String, param: String) throws(APIError) -> Obj {
        if let pm = paymentMethods[id] { return pm }
        if let number = TestCard.shortcut(id) {
            let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 3
            return try makePaymentMethod(
                [
                    "type": "card",
                    "card": ["number": .string(number), "exp_month": "12", "exp_year": .string(String(year))],
                ],
                prefix: nil)
        }
        throw .notFound("PaymentMethod", id, param: param)
    }

    func createPaymentMethod(_ call: inout Call) throws(APIError) -> JSONValue {
        if call.string("payment_method") != nil {
            // Cloning a customer's PaymentMethod onto a connected account is not supported here.
            throw .invalid("Cloning PaymentMethods is not supported by this test server.", param: "payment_method")
        }
        if call.params["customer"] != nil {
            throw .invalid("customer can only be given with payment_method", param: "customer")
        }
        return .object(try makePaymentMethod(call.params, prefix: nil))
    }

    func retrievePaymentMethod(_ call: inout Call) throws(APIError) -> JSONValue {
        guard let pm = paymentMethods[call.id] else { throw .notFound("PaymentMethod", call.id) }
        if case .ephemeral = call.auth { try requireCustomerScope(call.auth, pm["customer"]?.stringValue) }
        return .object(pm)
    }

    func attach(_ pmID: String, to customerID: String, param: String) throws(APIError) -> Obj {
        _ = try customer(customerID)
        var pm = try resolvePaymentMethod(pmID, param: param)
        let id = pm["id"]!.stringValue!
        if let owner = pm["customer"]?.stringValue {
            if owner == customerID { return pm }
            throw .invalid(
                "The payment method you provided has already been attached to a customer.",
                code: "payment_method_unexpected_state")
        }
        if let card = paymentMethodCards[id], let decline = card.decline {
            throw .card(code: decline.code, declineCode: decline.declineCode, message: decline.message)
        }
        pm["customer"] = .string(customerID)
        paymentMethods[id] = pm
        return pm
    }

    func attachPaymentMethod(_ call: inout Call) throws(APIError) -> JSONValue {
        let customerID = try call.require("customer")
        try requireCustomerScope(call.auth, customerID)
        return .object(try attach(call.id, to: customerID, param: "payment_method"))
    }

    func detachPaymentMethod(_ call: inout Call) throws(APIError) -> JSONValue {
        guard var pm = paymentMethods[call.id] else { throw .notFound("PaymentMethod", call.id) }
        guard let owner = pm["customer"]?.stringValue else {
            throw .invalid(
                "The payment method you provided is not attached to a customer so detachment is impossible.",
                code: "payment_method_unexpected_state")
        }
        try requireCustomerScope(call.auth, owner)
        pm["customer"] = .null
        paymentMethods[call.id] = pm
        if var c = customers[owner], c["invoice_settings"]?["default_payment_method"]?.stringValue == call.id {
            var settings = c["invoice_settings"]?.objectValue ?? [:]
            settings["default_payment_method"] = .null
            c["invoice_settings"] = .object(settings)
            customers[owner] = c
        }
        return .object(pm)
    }

    func listPaymentMethods(_ call: inout Call) throws(APIError) -> JSONValue {
        let customerID = try call.require("customer")
        let type = try call.require("type")
        try requireCustomerScope(call.auth, customerID)
        _ = try customer(customerID)
        var limit = Int(try call.int("limit") ?? 10)
        guard (1...100).contains(limit) else {
            throw .invalid("This value must be between 1 and 100 (it currently is \(limit)).", param: "limit")
        }
        var all = paymentMethods.values
            .filter { $0["customer"]?.stringValue == customerID && $0["type"]?.stringValue == type }
            .sorted { (created[$0["id"]!.stringValue!] ?? 0) > (created[$1["id"]!.stringValue!] ?? 0) }
        if let after = call.string("starting_after"), let i = all.firstIndex(where: { $0["id"]?.stringValue == after })
        {
            all = Array(all[(i + 1)...])
        }
        if let before = call.string("ending_before"), let i = all.firstIndex(where: { $0["id"]?.stringValue == before })
        {
            all = Array(all[..<i])
        }
        limit = min(limit, all.count)
        return [
            "object": "list", "data": .array(all.prefix(limit).map(JSONValue.object)),
            "has_more": .bool(all.count > limit), "url": "/v1/payment_methods",
        ]
    }
}

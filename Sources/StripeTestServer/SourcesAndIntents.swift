import Foundation
import JSONRPC

extension StripeTestState {
    static let sourceTypes: Set<String> = [
        "card", "sofort", "ideal", "bancontact", "giropay", "eps", "p24", "multibanco", "sepa_debit", "three_d_secure",
        "alipay", "wechat", "klarna",
    ]
    static let redirectSourceTypes: Set<String> = [
        "sofort", "ideal", "bancontact", "giropay", "eps", "p24", "three_d_secure", "alipay", "klarna",
    ]
    /// Types whose single-use sources need `amount` and `currency`.
    static let amountSourceTypes: Set<String> = [
        "sofort", "ideal", "bancontact", "giropay", "eps", "p24", "multibanco", "three_d_secure", "wechat",
    ]

    // MARK: Sources

    func createSource(_ call: inout Call) throws(APIError) -> JSONValue {
        let type = try call.require("type")
        guard Self.sourceTypes.contains(type) else {
            throw .invalid(
                "Invalid source type: \(type). This test server supports \(Self.sourceTypes.sorted().joined(separator: ", ")).",
                param: "type")
        }
        let amount = try call.int("amount")
        let currency = call.string("currency")?.lowercased()
        let isRedirect = Self.redirectSourceTypes.contains(type) || call.string("flow") == "redirect"
        let returnURL = call.params["redirect"]?["return_url"]?.stringValue
        if Self.amountSourceTypes.contains(type) {
            guard amount != nil else { throw .missing("amount") }
        }
        if amount != nil || Self.amountSourceTypes.contains(type) || type == "alipay" || type == "klarna" {
            guard currency != nil else { throw .missing("currency") }
        }
        if ["sofort", "ideal", "bancontact", "giropay", "eps", "multibanco", "sepa_debit"].contains(type), let currency,
            currency != "eur"
        {
            throw .invalid("Invalid currency: \(currency). The \(type) source only supports eur.", param: "currency")
        }
        if isRedirect || type == "multibanco" {
            guard let returnURL, !returnURL.isEmpty else { throw .missing("redirect[return_url]") }
        }

        let id = IDs.make("src_")
        let clientSecret = IDs.make("src_client_secret_")
        let ownerIn = call.params["owner"]?.objectValue
        var source: Obj = [
            "id": .string(id), "object": "source", "amount": amount.map(JSONValue.int) ?? .null,
            "client_secret": .string(clientSecret), "created": .int(Int64(now)),
            "currency": currency.map(JSONValue.string) ?? .null, "customer": .null, "livemode": false,
            "metadata": Self.mergeMetadata(nil, call.params["metadata"]),
            "owner": [
                "address": ownerIn?["address"] == nil ? .null : Self.addressObject(ownerIn?["address"]?.objectValue),
                "email": ownerIn?["email"]?.stringValue.map(JSONValue.string) ?? .null,
                "name": ownerIn?["name"]?.stringValue.map(JSONValue.string) ?? .null,
                "phone": ownerIn?["phone"]?.stringValue.map(JSONValue.string) ?? .null,
                "verified_address": .null, "verified_email": .null, "verified_name": .null, "verified_phone": .null,
            ],
            "statement_descriptor": call.string("statement_descriptor").map(JSONValue.string) ?? .null,
            "type": .string(type),
        ]
        let given: Obj = call.params[type]?.objectValue ?? [:]
        var flow = "none"
        var status = "pending"
        var usage = "single_use"
        switch type {
        case "card":
            let (card, month, year) = try parseCard(call.params["card"]?.objectValue, prefix: "card")
            sourceCards[id] = card
            source["card"] = [
                "address_line1_check": .null, "address_zip_check": .null, "brand": .string(card.sourceBrand),
                "country": .string(card.country), "cvc_check": call.params["card"]?["cvc"] == nil ? .null : "unchecked",
                "dynamic_last4": .null, "exp_month": .int(month), "exp_year": .int(year),
                "fingerprint": .string(card.fingerprint), "funding": .string(card.funding),
                "last4": .string(card.last4),
                "name": .null, "three_d_secure": .string(card.requiresAuthentication ? "required" : "optional"),
                "tokenization_method": .null,
            ]
            status = "chargeable"
            usage = "reusable"
        case "sepa_debit":
            guard let iban = given["iban"]?.stringValue, iban.count >= 8 else { throw .missing("sepa_debit[iban]") }
            source["sepa_debit"] = [
                "bank_code": "37040044", "branch_code": .null, "country": .string(String(iban.prefix(2)).uppercased()),
                "fingerprint": .string(TestCard(number: iban).fingerprint), "last4": .string(String(iban.suffix(4))),
                "mandate_reference": .string(IDs.make("", length: 16).uppercased()),
                "mandate_url": .string("\(call.baseURL)/_test/mandates/\(id)"),
            ]
            status = "chargeable"
            usage = "reusable"
        case "multibanco":
            flow = "receiver"
            source["receiver"] = [
                "address": "12345-123456789", "amount_charged": 0, "amount_received": 0, "amount_returned": 0,
                "refund_attributes_method": "email", "refund_attributes_status": "missing",
            ]
            source["multibanco"] = [
                "entity": "12345", "reference": "123456789", "refund_account_holder_address_city": .null,
                "refund_iban": .null,
            ]
        case "wechat":
            source["wechat"] = [
                "prepay_id": .string(IDs.make("wx", length: 28)), "qr_code_url": .null,
                "ios_native_url": .string("weixin://app/\(given["appid"]?.stringValue ?? "wx_test")/pay/"),
                "statement_descriptor": given["statement_descriptor"] ?? .null,
            ]
        case "three_d_secure":
            flow = "redirect"
            guard let cardID = given["card"]?.stringValue else { throw .missing("three_d_secure[card]") }
            guard let cardSource = sources[cardID], let card = sourceCards[cardID] else {
                throw .notFound("source", cardID, param: "three_d_secure[card]")
            }
            source["three_d_secure"] = [
                "authenticated": false, "brand": .string(card.sourceBrand), "card": .string(cardID),
                "country": .string(card.country),
                "customer": .null, "exp_month": cardSource["card"]?["exp_month"] ?? .null,
                "exp_year": cardSource["card"]?["exp_year"] ?? .null,
                "fingerprint": .string(card.fingerprint), "funding": .string(card.funding),
                "last4": .string(card.last4),
                "three_d_secure": .string(card.requiresAuthentication ? "required" : "optional"),
            ]
        case "alipay":
            flow = "redirect"
            if amount == nil { usage = "reusable" }
            source["alipay"] = ["data_string": .null, "native_url": .null, "statement_descriptor": .null]
        case "ideal":
            flow = "redirect"
            source["ideal"] = [
                "bank": given["bank"] ?? .null, "bic": .null, "iban_last4": .null,
                "statement_descriptor": given["statement_descriptor"] ?? .null,
            ]
        case "sofort":
            flow = "redirect"
            source["sofort"] = [
                "bank_code": .null, "bank_name": .null, "bic": .null, "country": given["country"] ?? .null,
                "iban_last4": .null, "preferred_language": given["preferred_language"] ?? .null,
                "statement_descriptor": given["statement_descriptor"] ?? .null,
            ]
        case "bancontact", "giropay", "eps":
            flow = "redirect"
            source[type] = [
                "bank_code": .null, "bank_name": .null, "bic": .null,
                "statement_descriptor": given["statement_descriptor"] ?? call.params["statement_descriptor"] ?? .null,
            ]
        case "p24":
            flow = "redirect"
            source["p24"] = ["reference": .string("P24-000-111-222")]
        case "klarna":
            flow = "redirect"
            var k = given
            k["client_token"] = .string(IDs.make("klarna_token_"))
            source["klarna"] = .object(k)
            if let order = call.params["source_order"] { source["source_order"] = order }
        default: break
        }
        if let requested = call.string("flow"),
            ["redirect", "none", "receiver", "code_verification"].contains(requested), type == "klarna"
        {
            flow = requested
        }
        if let u = call.string("usage") {
            guard ["reusable", "single_use"].contains(u) else {
                throw .invalid("Invalid usage: must be one of reusable or single_use", param: "usage")
            }
            usage = u
        }
        source["flow"] = .string(flow)
        source["status"] = .string(status)
        source["usage"] = .string(usage)
        if let returnURL, flow == "redirect" || type == "multibanco" {
            source["redirect"] = [
                "failure_reason": .null, "return_url": .string(returnURL), "status": "pending",
                "url": .string("\(call.baseURL)/_test/redirect/\(id)?client_secret=\(clientSecret)"),
            ]
        }
        sources[id] = source
        nextSeq(id)
        return .object(source)
    }

    func retrieveSource(_ call: inout Call) throws(APIError) -> JSONValue {
        guard let source = sources[call.id] else { throw .notFound("source", call.id) }
        if case .publishable = call.auth {
            guard let secret = call.string("client_secret"), secret == source["client_secret"]?.stringValue else {
                throw .notFound("source", call.id)
            }
        }
        return .object(source)
    }

    /// `authorize` → chargeable (redirect succeeded); `fail` → failed (redirect failed, declined);
    /// `cancel` → canceled (redirect failed, user_abort); `expire` → canceled (redirect untouched);
    /// `consume` → consumed.
    func driveSource(_ id: String, _ action: String) throws(APIError) -> JSONValue {
        guard var source = sources[id] else { throw .notFound("source", id) }
        var redirect = source["redirect"]?.objectValue
        switch action {
        case "authorize", "chargeable":
            source["status"] = "chargeable"
            redirect?["status"] = "succeeded"
            if var receiver = source["receiver"]?.objectValue {
                receiver["amount_received"] = source["amount"] ?? 0
                source["receiver"] = .object(receiver)
            }
            if var tds = source["three_d_secure"]?.objectValue {
                tds["authenticated"] = true
                source["three_d_secure"] = .object(tds)
            }
        case "fail":
            source["status"] = "failed"
            redirect?["status"] = "failed"
            redirect?["failure_reason"] = "declined"
        case "cancel":
            source["status"] = "canceled"
            redirect?["status"] = "failed"
            redirect?["failure_reason"] = "user_abort"
        case "expire":
            source["status"] = "canceled"
        case "consume":
            source["status"] = "consumed"
        default:
            throw .invalid("Unknown source action \(action): use authorize, fail, cancel, expire or consume")
        }
        if let redirect { source["redirect"] = .object(redirect) }
        sources[id] = source
        return .object(source)
    }

    // MARK: PaymentIntents

    func paymentIntent(_ id: String) throws(APIError) -> Obj {
        settle(id)
        guard let pi = paymentIntents[id] else { throw .notFound("payment_intent", id, param: "intent") }
        return pi
    }

    func createPaymentIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        guard let amount = try call.int("amount") else { throw .missing("amount") }
        guard amount >= 50 else {
            throw .invalid("Amount must be at least $0.50 usd", param: "amount", code: "amount_too_small")
        }
        let currency = try call.require("currency").lowercased()
        if let customerID = call.string("customer") { _ = try customer(customerID) }
        let id = IDs.make("pi_")
        let types = call.params["payment_method_types"]?.arrayValue ?? ["card"]
        let captureMethod = call.string("capture_method") ?? "automatic"
        guard ["automatic", "manual", "automatic_async"].contains(captureMethod) else {
            throw .invalid("Invalid capture_method", param: "capture_method")
        }
        var pi: Obj = [
            "id": .string(id), "object": "payment_intent", "amount": .int(amount), "amount_capturable": 0,
            "amount_details": ["tip": [:]], "amount_received": 0, "application": .null, "application_fee_amount": .null,
            "automatic_payment_methods": call.params["automatic_payment_methods"] == nil
                ? .null
                : ["enabled": .bool(call.params["automatic_payment_methods"]?["enabled"]?.boolFromForm ?? false)],
            "canceled_at": .null, "cancellation_reason": .null, "capture_method": .string(captureMethod),
            "client_secret": .string("\(id)_secret_\(IDs.make("", length: 25))"),
            "confirmation_method": .string(call.string("confirmation_method") ?? "automatic"),
            "created": .int(Int64(now)), "currency": .string(currency),
            "customer": call.string("customer").map(JSONValue.string) ?? .null,
            "description": call.string("description").map(JSONValue.string) ?? .null,
            "last_payment_error": .null, "latest_charge": .null, "livemode": false,
            "metadata": Self.mergeMetadata(nil, call.params["metadata"]), "next_action": .null, "on_behalf_of": .null,
            "payment_method": .null, "payment_method_configuration_details": .null, "payment_method_options": [:],
            "payment_method_types": .array(types), "processing": .null,
            "receipt_email": call.string("receipt_email").map(JSONValue.string) ?? .null, "review": .null,
            "setup_future_usage": call.string("setup_future_usage").map(JSONValue.string) ?? .null,
            "shipping": try Self.shippingObject(call.params["shipping"], existing: .null),
            "source": .null, "statement_descriptor": call.string("statement_descriptor").map(JSONValue.string) ?? .null,
            "statement_descriptor_suffix": .null, "status": "requires_payment_method", "transfer_data": .null,
            "transfer_group": .null,
        ]
        if let pmID = call.string("payment_method") {
            let pm = try resolvePaymentMethod(pmID, param: "payment_method")
            pi["payment_method"] = pm["id"]!
            pi["status"] = "requires_confirmation"
        }
        paymentIntents[id] = pi
        nextSeq(id)
        if call.params["confirm"]?.boolFromForm == true {
            return try confirm(id, call: call)
        }
        return .object(pi)
    }

    func checkClientSecret(_ pi: Obj, _ call: Call) throws(APIError) {
        guard case .publishable = call.auth else { return }
        guard let secret = call.string("client_secret"), secret == pi["client_secret"]?.stringValue else {
            if call.string("client_secret") == nil { throw .missing("client_secret") }
            throw .invalid(
                "The client_secret provided does not match the client_secret associated with the PaymentIntent.",
                param: "client_secret", code: "payment_intent_invalid_parameter")
        }
    }

    func retrievePaymentIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        let pi = try paymentIntent(call.id)
        try checkClientSecret(pi, call)
        return renderIntent(pi, expand: call.expand)
    }

    /// A PaymentIntent or SetupIntent as answered, its `payment_method` expanded when asked.
    func renderIntent(_ pi: Obj, expand: [String]) -> JSONValue {
        var pi = pi
        if expand.contains("payment_method"), let pm = pi["payment_method"]?.stringValue, let obj = paymentMethods[pm] {
            pi["payment_method"] = .object(obj)
        }
        return .object(pi)
    }

    func confirmPaymentIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        let pi = try paymentIntent(call.id)
        try Self.refuseClientSecretFromServerKey(call)
        try checkClientSecret(pi, call)
        return try confirm(call.id, call: call)
    }

    /// A confirmation takes `client_secret` from a publishable key only: Stripe's API has no such
    /// parameter for a secret or restricted key, and says so.
    static func refuseClientSecretFromServerKey(_ call: Call) throws(APIError) {
        if case .publishable = call.auth { return }
        if call.params["client_secret"] != nil { throw .unknownParameters(["client_secret"]) }
    }

    func confirm(_ id: String, call: Call) throws(APIError) -> JSONValue {
        var pi = try paymentIntent(id)
        let status = pi["status"]?.stringValue ?? ""
        guard ["requires_payment_method", "requires_confirmation", "requires_action"].contains(status) else {
            throw APIError(
                status: 400, type: "invalid_request_error",
                message: "You cannot confirm this PaymentIntent because it has a status of \(status).",
                code: "payment_intent_unexpected_state", extra: ["payment_intent": .object(pi)])
        }
        var pm: Obj?
        if let data = call.params["payment_method_data"]?.objectValue {
            pm = try makePaymentMethod(data, prefix: "payment_method_data")
        } else if let pmID = call.string("payment_method") {
            pm = try resolvePaymentMethod(pmID, param: "payment_method")
        } else if let existing = pi["payment_method"]?.stringValue {
            pm = paymentMethods[existing]
        }
        guard let pm, let pmID = pm["id"]?.stringValue, let type = pm["type"]?.stringValue else {
            throw .invalid(
                "You cannot confirm this PaymentIntent because it's missing a payment method. You can either update the PaymentIntent with a payment method and then confirm it again, or confirm it again directly with a payment method.",
                code: "payment_intent_unexpected_state")
        }
        if let owner = pm["customer"]?.stringValue, owner != pi["customer"]?.stringValue {
            throw .invalid(
                "The provided PaymentMethod was previously used with a PaymentIntent without Customer attachment, shared with a connected account without Customer attachment, or was detached from a Customer. It may not be used again. To use a PaymentMethod multiple times, you must attach it to a Customer first.",
                param: "payment_method", code: "payment_method_unexpected_state")
        }
        if let types = pi["payment_method_types"]?.arrayValue?.compactMap(\.stringValue), !types.contains(type),
            pi["automatic_payment_methods"]?["enabled"] != .bool(true)
        {
            throw .invalid(
                "The PaymentMethod provided (\(type)) is not allowed for this PaymentIntent. Please attach a PaymentMethod of one of the following types: \(types.joined(separator: ", ")).",
                param: "payment_method", code: "payment_intent_incompatible_payment_method")
        }
        let returnURL = call.string("return_url")
        let authenticated = pendingActions[id]?.authenticated ?? false && pi["payment_method"]?.stringValue == pmID
        pi["payment_method"] = .string(pmID)
        pi["last_payment_error"] = .null
        pi["next_action"] = .null
        pendingActions[id] = nil
        if let r = call.string("receipt_email") { pi["receipt_email"] = .string(r) }
        if let s = call.string("setup_future_usage") { pi["setup_future_usage"] = .string(s) }
        if call.params["shipping"] != nil {
            pi["shipping"] = try Self.shippingObject(call.params["shipping"], existing: pi["shipping"])
        }
        if call.params["save_payment_method"]?.boolFromForm == true || pi["setup_future_usage"]?.stringValue != nil,
            let customerID = pi["customer"]?.stringValue, pm["customer"] == .null
        {
            paymentMethods[pmID]?["customer"] = .string(customerID)
        }

        if type == "card", let card = paymentMethodCards[pmID] {
            if let decline = card.decline {
                let error = APIError.card(
                    code: decline.code, declineCode: decline.declineCode, message: decline.message,
                    extra: ["payment_method": .object(paymentMethods[pmID] ?? pm)])
                pi["status"] = "requires_payment_method"
                pi["payment_method"] = .null
                pi["last_payment_error"] = .object(error.error)
                pi["latest_charge"] = .string(IDs.make("ch_"))
                paymentIntents[id] = pi
                var e = error
                e.error["payment_intent"] = .object(pi)
                throw e
            }
            if card.requiresAuthentication, !authenticated,
                status != "requires_action" || call.params["payment_method"] != nil
                    || call.params["payment_method_data"] != nil
            {
                pi["status"] = "requires_action"
                pi["next_action"] = threeDSecureAction(id, pi, returnURL: returnURL, base: call.baseURL)
                paymentIntents[id] = pi
                return renderIntent(pi, expand: call.expand)
            }
            succeed(&pi)
        } else if try !startAction(on: &pi, pm: pm, call: call) {
            // No next action: a bank debit is processing for days, the rest succeed at once.
            if ["sepa_debit", "bacs_debit", "au_becs_debit"].contains(type) {
                pi["status"] = "processing"
                pi["processing"] = .null
            } else {
                succeed(&pi)
            }
        }
        paymentIntents[id] = pi
        return renderIntent(pi, expand: call.expand)
    }

    /// What a card that needs 3-D Secure asks for: a redirect to the test bank page when the
    /// confirmation gave a return URL, else `use_stripe_sdk` (Stripe.js's and the mobile SDKs' own
    /// 3-D Secure, in its `three_d_secure_redirect` form pointing at the same page), as Stripe answers.
    func threeDSecureAction(_ id: String, _ intent: Obj, returnURL: String?, base: String) -> JSONValue {
        let secret = intent["client_secret"]?.stringValue ?? ""
        let page = JSONValue.string("\(base)/_test/redirect/\(id)?client_secret=\(secret)")
        guard let returnURL, !returnURL.isEmpty else {
            return [
                "type": "use_stripe_sdk",
                "use_stripe_sdk": [
                    "type": "three_d_secure_redirect", "stripe_js": page, "source": .string(IDs.make("src_")),
                ],
            ]
        }
        return ["type": "redirect_to_url", "redirect_to_url": ["return_url": .string(returnURL), "url": page]]
    }

    func succeed(_ pi: inout Obj) {
        let manual = pi["capture_method"]?.stringValue == "manual"
        pi["status"] = manual ? "requires_capture" : "succeeded"
        pi["next_action"] = .null
        pi["last_payment_error"] = .null
        pi["latest_charge"] = .string(IDs.make("ch_"))
        if manual { pi["amount_capturable"] = pi["amount"] ?? 0 } else { pi["amount_received"] = pi["amount"] ?? 0 }
    }

    func cancelPaymentIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        var pi = try paymentIntent(call.id)
        let status = pi["status"]?.stringValue ?? ""
        guard !["succeeded", "canceled"].contains(status) else {
            throw APIError(
                status: 400, type: "invalid_request_error",
                message:
                    "You cannot cancel this PaymentIntent because it has a status of \(status). Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.",
                code: "payment_intent_unexpected_state")
        }
        pi["status"] = "canceled"
        pi["canceled_at"] = .int(Int64(now))
        pi["cancellation_reason"] = call.string("cancellation_reason").map(JSONValue.string) ?? .null
        pi["next_action"] = .null
        paymentIntents[call.id] = pi
        pendingActions[call.id] = nil
        return .object(pi)
    }
}

import Foundation
import JSONRPC

/// Every next action a confirmation can start, and the customer's side of it, as Stripe's test mode
/// plays them; PaymentIntents and SetupIntents alike. Times run on the server's clock (`/_test/clock`),
/// and an intent settles whatever is due whenever it is read.
/// - Redirects (`redirect_to_url`, `alipay_handle_redirect`, Cash App's and Swish's
///   `mobile_auth_url`, WeChat Pay's app actions): the test page `/_test/redirect/{id}` succeeds, fails
///   or expires them and answers 302 to the confirmation's return URL. Back from Cash App or Klarna the
///   result is held: a plain read shows it only 5 s later, `POST …/refresh` at once (the SDK refreshes
///   these because the intent "often isn't updated instantaneously"). A card's 3-D Secure without a
///   return URL is `use_stripe_sdk`'s `three_d_secure_redirect` page; a PaymentIntent with
///   `confirmation_method: manual` waits in `requires_confirmation` after it, and the server's next
///   confirmation charges it without asking again.
/// - Vouchers (OXXO, Boleto, Konbini, Multibanco) and Pix, by the billing email, as Stripe documents
///   for their test mode: `…succeed_immediately@…` paid at once, `…expire_immediately@…` expired at
///   once, `…expire_with_delay@…` expired after 3 minutes, `…fill_never@…` expired at its expiry, any
///   other paid after 3 minutes.
/// - QR codes (PayNow, PromptPay, WeChat Pay, UPI) and bank transfers: paid through the test page or
///   the control endpoints.
/// - BLIK (`payment_method_options[blik][code]`): `123456` is approved after 10 s; any other six
///   digits is never approved and expires after the 60 s BLIK allows.
/// - `us_bank_account` entered by hand (routing number 110000000): `verify_with_microdeposits`, then
///   `verify_microdeposits` with Stripe's test values (Microdeposits.swift); unverified for 10 days, it
///   times out.
/// - Control: `POST /_test/{payment_intents|setup_intents}/{id}/{succeed|fail|process|expire}`, and
///   `.../next_action` with any `next_action` hash as JSON (card await-notification, Klarna's QR code,
///   `use_stripe_sdk`, a type nobody knows).
extension StripeTestState {
    /// A Stripe error's code and message.
    struct Failure: Sendable {
        let code: String
        let message: String
        init(_ code: String, _ message: String) {
            self.code = code
            self.message = message
        }
    }

    /// How a customer's side ends.
    enum Outcome: Sendable {
        case succeed, process, expire
        /// Requires a new payment method, with this error or the kind of action's own.
        case fail(Failure? = nil)

        init(control action: String) throws(APIError) {
            switch action {
            case "succeed": self = .succeed
            case "fail": self = .fail()
            case "process": self = .process
            case "expire": self = .expire
            default:
                throw .invalid("Unknown intent action \(action): use succeed, fail, process, expire or next_action")
            }
        }
    }

    /// What a started action does on its own and when, and where its customer comes back to.
    struct PendingAction: Sendable {
        var returnURL: String?
        var dueAt: Int?
        var outcome: Outcome = .succeed
        /// A bank account awaiting microdeposit verification: its last four digits and failed tries.
        var account: String?
        var amountFailures = 0
        var codeFailures = 0
        /// A PaymentIntent with `confirmation_method: manual` whose 3-D Secure succeeded: it waits in
        /// requires_confirmation, and the server's next confirmation charges it without asking again.
        var authenticated = false
        /// Cash App's or Klarna's result after the customer came back, not yet on the intent: a
        /// refresh applies it at once, a plain read only once `heldUntil` passes (the SDK refreshes
        /// these because the intent "often isn't updated instantaneously").
        var held: Outcome?
        var heldUntil: Int?
    }

    /// The types whose result reaches the intent late, which the SDK re-reads through refresh
    /// (`STPPaymentMethodType.supportsRefreshing`).
    static let refreshedTypes: Set<String> = ["cashapp", "klarna"]
    /// How long a plain read still shows such an intent requiring action.
    static let heldSeconds = 5

    static let redirectTypes: Set<String> = [
        "affirm", "afterpay_clearpay", "alma", "amazon_pay", "bancontact", "billie", "crypto", "eps", "fpx",
        "giropay", "grabpay", "ideal", "klarna", "kr_card", "mobilepay", "naver_pay", "p24", "pay_by_bank", "payco",
        "paypal", "revolut_pay", "satispay", "sofort", "sunbit", "twint", "zip",
    ]

    /// Sets the next action a confirmation with `pm` needs on `intent`, or answers false when it needs
    /// none (the caller completes it). The intent's `payment_method` is already set.
    func startAction(on intent: inout Obj, pm: Obj, call: Call) throws(APIError) -> Bool {
        let id = intent["id"]!.stringValue!
        let type = pm["type"]?.stringValue ?? ""
        let page = "\(call.baseURL)/_test/redirect/\(id)?client_secret=\(intent["client_secret"]?.stringValue ?? "")"
        let returnURL = call.string("return_url").flatMap { $0.isEmpty ? nil : $0 }
        func requireReturnURL() throws(APIError) -> JSONValue {
            guard let returnURL else { throw .missing("return_url") }
            return .string(returnURL)
        }
        let qr: JSONValue = [
            "expires_at": .int(Int64(now + 1800)), "image_url_png": .string("https://qr.stripe.com/test_\(id).png"),
            "image_url_svg": .string("https://qr.stripe.com/test_\(id).svg"),
        ]
        func qrCode(_ data: String) -> JSONValue {
            [
                "data": .string(data), "hosted_instructions_url": .string(page),
                "image_url_png": qr["image_url_png"]!, "image_url_svg": qr["image_url_svg"]!,
            ]
        }
        var pending = PendingAction(returnURL: returnURL)
        /// Stripe's email scenarios for vouchers and Pix; `expiresIn` seconds until an untouched one
        /// expires. Answers when it expires.
        func scenario(expiresIn: Int) -> Int {
            let email = pm["billing_details"]?["email"]?.stringValue ?? ""
            let local = email.split(separator: "@").first ?? ""
            var expiresAt = now + expiresIn
            (pending.dueAt, pending.outcome) = (now + 180, .succeed)
            if local.hasSuffix("succeed_immediately") {
                pending.dueAt = now
            } else if local.hasSuffix("expire_immediately") {
                (expiresAt, pending.dueAt, pending.outcome) = (now, now, .expire)
            } else if local.hasSuffix("expire_with_delay") {
                (expiresAt, pending.outcome) = (now + 180, .expire)
            } else if local.hasSuffix("fill_never") {
                (pending.dueAt, pending.outcome) = (expiresAt, .expire)
            }
            return expiresAt
        }
        let kind: String
        let details: JSONValue
        switch type {
        case _ where Self.redirectTypes.contains(type):
            (kind, details) = ("redirect_to_url", ["return_url": try requireReturnURL(), "url": .string(page)])
        case "alipay":
            kind = "alipay_handle_redirect"
            details = [
                "native_data": .null, "native_url": .null, "return_url": try requireReturnURL(), "url": .string(page),
            ]
        case "cashapp", "swish":
            _ = try requireReturnURL()
            kind = "\(type)_handle_redirect_or_display_qr_code"
            var code = qr.objectValue!
            if type == "swish" { code["data"] = .string("https://app.swish.nu/1/p/sw/?sw=test_\(id)") }
            details = [
                "hosted_instructions_url": .string(page), "mobile_auth_url": .string(page), "qr_code": .object(code),
            ]
        case "wechat_pay":
            (kind, details) = try weChatPayAction(id, page: page, call: call, qrCode: qrCode)
        case "paynow", "promptpay":
            (kind, details) = ("\(type)_display_qr_code", qrCode("00020101021226\(type)test_\(id)"))
        case "pix":
            kind = "pix_display_qr_code"
            var code = qrCode("00020101021226880014br.gov.bcb.pix2566test_\(id)").objectValue!
            code["expires_at"] = .int(Int64(scenario(expiresIn: 4 * 3600)))
            details = .object(code)
        case "upi":
            kind = "upi_handle_redirect_or_display_qr_code"
            details = ["hosted_instructions_url": .string(page), "qr_code": qr]
        case "customer_balance":
            (kind, details) = ("display_bank_transfer_instructions", bankTransferInstructions(intent, page: page))
        case "blik":
            let code = call.params["payment_method_options"]?["blik"]?["code"]?.stringValue
            guard let code else { throw .missing("payment_method_options[blik][code]") }
            guard code.count == 6, code.allSatisfy({ ("0"..."9").contains($0) }) else {
                throw .invalid("Invalid BLIK code: it must be six digits.", param: "payment_method_options[blik][code]")
            }
            (pending.dueAt, pending.outcome) = code == "123456" ? (now + 10, .succeed) : (now + 60, .expire)
            (kind, details) = ("blik_authorize", [:])
        case "oxxo":
            kind = "oxxo_display_details"
            details = [
                "expires_after": .int(Int64(scenario(expiresIn: 3 * 86400))), "hosted_voucher_url": .string(page),
                "number": "12345678901234657890123456789012",
            ]
        case "boleto":
            kind = "boleto_display_details"
            details = [
                "expires_at": .int(Int64(scenario(expiresIn: 3 * 86400))), "hosted_voucher_url": .string(page),
                "number": "01010101010101010101010101010101010101010101010",
                "pdf": .string(page + "&format=pdf"),
            ]
        case "konbini":
            kind = "konbini_display_details"
            let store: JSONValue = ["confirmation_number": "11111111110", "payment_code": "123456"]
            details = [
                "expires_at": .int(Int64(scenario(expiresIn: 3 * 86400))), "hosted_voucher_url": .string(page),
                "stores": ["familymart": store, "lawson": store, "ministop": store, "seicomart": store],
            ]
        case "multibanco":
            kind = "multibanco_display_details"
            details = [
                "entity": "12345", "expires_at": .int(Int64(scenario(expiresIn: 7 * 86400))),
                "hosted_voucher_url": .string(page),
                "reference": "123456789",
            ]
        case "us_bank_account":
            // Stripe refuses a bank debit without the customer's acceptance of the mandate.
            guard call.params["mandate_data"] != nil else { throw .missing("mandate_data") }
            let last4 = pm["us_bank_account"]?["last4"]?.stringValue ?? ""
            guard last4 != "6661" else {
                finish(&intent, .fail(Self.microdepositsNotSent))
                return true
            }
            (pending.account, pending.dueAt, pending.outcome) = (
                last4, now + 10 * 86400, .fail(Self.microdepositTimeout)
            )
            kind = "verify_with_microdeposits"
            details = [
                "arrival_date": .int(Int64(now + 2 * 86400)), "hosted_verification_url": .string(page),
                "microdeposit_type": "descriptor_code",
            ]
        default:
            return false
        }
        intent["status"] = "requires_action"
        intent["next_action"] = ["type": .string(kind), kind: details]
        pendingActions[id] = pending
        return true
    }

    /// WeChat Pay by `payment_method_options[wechat_pay][client]`: a QR code for `web`, the app's
    /// launch data for `ios` and `android`.
    private func weChatPayAction(
        _ id: String, page: String, call: Call, qrCode: (String) -> JSONValue
    ) throws(APIError) -> (String, JSONValue) {
        let param = "payment_method_options[wechat_pay][client]"
        switch call.params["payment_method_options"]?["wechat_pay"]?["client"]?.stringValue {
        case "web"?:
            var code = qrCode("weixin://wxpay/bizpayurl?pr=test_\(id)").objectValue!
            code["image_data_url"] = "data:image/png;base64,iVBORw0KGgo="
            return ("wechat_pay_display_qr_code", .object(code))
        case "ios"?:
            return ("wechat_pay_redirect_to_ios_app", ["native_url": .string("weixin://app/wx_test/pay/?test_\(id)")])
        case "android"?:
            return (
                "wechat_pay_redirect_to_android_app",
                [
                    "app_id": "wx_test", "nonce_str": "test", "package": "Sign=WXPay", "partner_id": "test",
                    "prepay_id": .string("wx_\(id)"), "sign": "test", "timestamp": .string(String(now)),
                ]
            )
        case nil: throw .missing(param)
        case let client?: throw .invalid("Invalid client: \(client). Use android, ios or web.", param: param)
        }
    }

    /// A US bank transfer's instructions, for a `customer_balance` payment.
    private func bankTransferInstructions(_ intent: Obj, page: String) -> JSONValue {
        let address: JSONValue = [
            "city": "San Francisco", "country": "US", "line1": "354 Oyster Point Blvd", "line2": .null,
            "postal_code": "94080", "state": "CA",
        ]
        return [
            "amount_remaining": intent["amount"] ?? 0, "currency": intent["currency"] ?? "usd",
            "financial_addresses": [
                [
                    "aba": [
                        "account_holder_address": address, "account_holder_name": "Stripe Test",
                        "account_number": "11111111111", "account_type": "checking", "bank_address": address,
                        "bank_name": "STRIPE TEST BANK", "routing_number": "110000000",
                    ],
                    "supported_networks": ["ach", "domestic_wire_us"], "type": "aba",
                ]
            ],
            "hosted_instructions_url": .string(page), "reference": .null, "type": "us_bank_transfer",
        ]
    }

    // MARK: Ending the customer's side

    /// The intent `id` (a PaymentIntent or a SetupIntent, by its prefix), after whatever was due.
    func intent(_ id: String) throws(APIError) -> Obj {
        id.hasPrefix("seti_") ? try setupIntent(id) : try paymentIntent(id)
    }

    /// Applies a pending action's outcome once its time has come; every read of an intent calls it.
    func settle(_ id: String) {
        if let held = pendingActions[id]?.held, let until = pendingActions[id]?.heldUntil, until <= now {
            applyHeld(id, held)
        }
        guard let pending = pendingActions[id], let dueAt = pending.dueAt, dueAt <= now else { return }
        pendingActions[id]?.dueAt = nil
        guard var object = id.hasPrefix("seti_") ? setupIntents[id] : paymentIntents[id] else { return }
        finish(&object, pending.outcome)
        store(object)
    }

    /// Ends the customer's side of intent `id`'s action (control endpoints and the test page).
    func finishAction(_ id: String, _ outcome: Outcome) throws(APIError) -> JSONValue {
        var object = try intent(id)
        finish(&object, outcome)
        store(object)
        return .object(object)
    }

    /// `succeed` completes it; `process` leaves it processing; `expire` and `fail` require a new
    /// payment method, with Stripe's error for the kind of action in `last_payment_error`
    /// (`last_setup_error`).
    func finish(_ object: inout Obj, _ outcome: Outcome) {
        let id = object["id"]?.stringValue ?? ""
        let isSetup = id.hasPrefix("seti_")
        let action = object["next_action"]?["type"]?.stringValue
        pendingActions[id]?.dueAt = nil
        var code: String
        var message: String
        switch outcome {
        case .succeed:
            if isSetup {
                succeedSetup(&object)
            } else if object["confirmation_method"]?.stringValue == "manual" {
                // As Stripe does: authenticated, it waits for the server to confirm it again.
                object["status"] = "requires_confirmation"
                object["next_action"] = .null
                pendingActions[id, default: PendingAction()].authenticated = true
            } else {
                succeed(&object)
            }
            return
        case .process:
            object["status"] = "processing"
            object["next_action"] = .null
            return
        case .expire:
            (code, message) =
                isSetup
                ? ("setup_intent_setup_attempt_expired", "The latest setup attempt for this SetupIntent has expired.")
                : (
                    "payment_intent_payment_attempt_expired",
                    "The latest payment attempt of this PaymentIntent has expired. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again."
                )
        case .fail(let given):
            let redirect = action == nil || action == "redirect_to_url" || action == "use_stripe_sdk"
            (code, message) =
                isSetup
                ? (
                    "setup_intent_authentication_failure",
                    "The latest attempt to set up the payment method has failed because authentication failed."
                )
                : redirect
                    ? (
                        "payment_intent_authentication_failure",
                        "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again."
                    )
                    : (
                        "payment_intent_payment_attempt_failed",
                        "The latest payment attempt of this PaymentIntent has failed or been canceled, and the attached payment method has been removed. You can try confirming again with a new payment method."
                    )
            (code, message) = (given?.code ?? code, given?.message ?? message)
        }
        var error = APIError(status: 400, type: "invalid_request_error", message: message, code: code).error
        if let pm = object["payment_method"]?.stringValue, let obj = paymentMethods[pm] {
            error["payment_method"] = .object(obj)
        }
        object["status"] = "requires_payment_method"
        object["next_action"] = .null
        object["payment_method"] = .null
        object[isSetup ? "last_setup_error" : "last_payment_error"] = .object(error)
    }

    /// `POST /_test/{payment_intents|setup_intents}/{id}/next_action`: the intent requires the action
    /// given as JSON, whatever its type.
    func setNextAction(_ id: String, _ body: [UInt8]) throws(APIError) -> JSONValue {
        let json = try? JSONCoding.decode(JSONValue.self, from: Data(body))
        guard let action = json?.objectValue, action["type"]?.stringValue != nil else {
            throw .invalid("the body must be a next_action object with a type")
        }
        var object = try intent(id)
        object["status"] = "requires_action"
        object["next_action"] = .object(action)
        store(object)
        pendingActions[id] = PendingAction(returnURL: pendingActions[id]?.returnURL)
        return .object(object)
    }

    private func applyHeld(_ id: String, _ outcome: Outcome) {
        pendingActions[id]?.held = nil
        pendingActions[id]?.heldUntil = nil
        guard var object = id.hasPrefix("seti_") ? setupIntents[id] : paymentIntents[id] else { return }
        finish(&object, outcome)
        store(object)
    }

    /// Whether the customer's result on the page of intent `object` is held for a refresh.
    func holdsResult(_ object: Obj) -> Bool {
        let pm = object["payment_method"]?.stringValue.flatMap { paymentMethods[$0] }
        return pm?["type"]?.stringValue.map(Self.refreshedTypes.contains) ?? false
    }

    /// `POST /v1/{payment,setup}_intents/:id/refresh`: the intent with any held result applied.
    func refreshIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        let object = try intent(call.id)
        if call.id.hasPrefix("seti_") {
            try checkSetupClientSecret(object, call)
        } else {
            try checkClientSecret(object, call)
        }
        if let held = pendingActions[call.id]?.held { applyHeld(call.id, held) }
        return renderIntent(try intent(call.id), expand: call.expand)
    }

    func store(_ object: Obj) {
        guard let id = object["id"]?.stringValue else { return }
        if id.hasPrefix("seti_") { setupIntents[id] = object } else { paymentIntents[id] = object }
    }
}

import Foundation
import JSONRPC

/// SetupIntents: saving a payment method without a charge. Confirmation takes the same payment
/// method forms as a PaymentIntent's; a 3-D Secure card asks for the test bank page
/// (`threeDSecureAction`), other types start their next action as a PaymentIntent's (NextActions.swift).
extension StripeTestState {
    func setupIntent(_ id: String) throws(APIError) -> Obj {
        settle(id)
        guard let seti = setupIntents[id] else { throw .notFound("setupintent", id, param: "intent") }
        return seti
    }

    func createSetupIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        if let customerID = call.string("customer") { _ = try customer(customerID) }
        let usage = call.string("usage") ?? "off_session"
        guard ["on_session", "off_session"].contains(usage) else { throw .invalid("Invalid usage", param: "usage") }
        let id = IDs.make("seti_")
        var seti: Obj = [
            "id": .string(id), "object": "setup_intent", "application": .null, "automatic_payment_methods": .null,
            "cancellation_reason": .null, "client_secret": .string("\(id)_secret_\(IDs.make("", length: 25))"),
            "created": .int(Int64(now)), "customer": call.string("customer").map(JSONValue.string) ?? .null,
            "description": call.string("description").map(JSONValue.string) ?? .null, "flow_directions": .null,
            "last_setup_error": .null, "latest_attempt": .null, "livemode": false, "mandate": .null,
            "metadata": Self.mergeMetadata(nil, call.params["metadata"]), "next_action": .null, "on_behalf_of": .null,
            "payment_method": .null, "payment_method_configuration_details": .null, "payment_method_options": [:],
            "payment_method_types": .array(call.params["payment_method_types"]?.arrayValue ?? ["card"]),
            "single_use_mandate": .null, "status": "requires_payment_method", "usage": .string(usage),
        ]
        if let pmID = call.string("payment_method") {
            seti["payment_method"] = try resolvePaymentMethod(pmID, param: "payment_method")["id"]!
            seti["status"] = "requires_confirmation"
        }
        setupIntents[id] = seti
        nextSeq(id)
        if call.params["confirm"]?.boolFromForm == true { return try confirmSetup(id, call: call) }
        return .object(seti)
    }

    func retrieveSetupIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        let seti = try setupIntent(call.id)
        try checkSetupClientSecret(seti, call)
        return renderIntent(seti, expand: call.expand)
    }

    func confirmSetupIntent(_ call: inout Call) throws(APIError) -> JSONValue {
        let seti = try setupIntent(call.id)
        try Self.refuseClientSecretFromServerKey(call)
        try checkSetupClientSecret(seti, call)
        return try confirmSetup(call.id, call: call)
    }

    func checkSetupClientSecret(_ seti: Obj, _ call: Call) throws(APIError) {
        guard case .publishable = call.auth else { return }
        guard let secret = call.string("client_secret") else { throw .missing("client_secret") }
        guard secret == seti["client_secret"]?.stringValue else {
            throw .invalid(
                "The client_secret provided does not match the client_secret associated with the SetupIntent.",
                param: "client_secret", code: "setup_intent_invalid_parameter")
        }
    }

    private func confirmSetup(_ id: String, call: Call) throws(APIError) -> JSONValue {
        var seti = try setupIntent(id)
        let status = seti["status"]?.stringValue ?? ""
        guard ["requires_payment_method", "requires_confirmation", "requires_action"].contains(status) else {
            throw APIError(
                status: 400, type: "invalid_request_error",
                message: "You cannot confirm this SetupIntent because it has a status of \(status).",
                code: "setup_intent_unexpected_state", extra: ["setup_intent": .object(seti)])
        }
        var pm: Obj?
        if let data = call.params["payment_method_data"]?.objectValue {
            pm = try makePaymentMethod(data, prefix: "payment_method_data")
        } else if let pmID = call.string("payment_method") {
            pm = try resolvePaymentMethod(pmID, param: "payment_method")
        } else if let existing = seti["payment_method"]?.stringValue {
            pm = paymentMethods[existing]
        }
        guard let pm, let pmID = pm["id"]?.stringValue, let type = pm["type"]?.stringValue else {
            throw .invalid(
                "You cannot confirm this SetupIntent because it's missing a payment method. You can either update the SetupIntent with a payment method and then confirm it again, or confirm it again directly with a payment method.",
                code: "setup_intent_unexpected_state")
        }
        seti["payment_method"] = .string(pmID)
        seti["last_setup_error"] = .null
        seti["next_action"] = .null
        pendingActions[id] = nil
        seti["latest_attempt"] = .string(IDs.make("setatt_"))
        if type == "card", let card = paymentMethodCards[pmID] {
            if let decline = card.decline {
                var error = APIError.card(
                    code: decline.code, declineCode: decline.declineCode, message: decline.message,
                    extra: ["payment_method": .object(pm)])
                seti["status"] = "requires_payment_method"
                seti["payment_method"] = .null
                seti["last_setup_error"] = .object(error.error)
                setupIntents[id] = seti
                error.error["setup_intent"] = .object(seti)
                throw error
            }
            if card.requiresAuthentication {
                seti["status"] = "requires_action"
                seti["next_action"] = threeDSecureAction(
                    id, seti, returnURL: call.string("return_url"), base: call.baseURL)
            } else {
                succeedSetup(&seti)
            }
        } else if try !startAction(on: &seti, pm: pm, call: call) {
            // Stripe refuses a SEPA Debit mandate without the customer's acceptance.
            if type == "sepa_debit", call.params["mandate_data"] == nil { throw .missing("mandate_data") }
            succeedSetup(&seti)
        }
        setupIntents[id] = seti
        return renderIntent(seti, expand: call.expand)
    }

    /// Succeeded: the payment method is saved to the SetupIntent's customer, if it has one.
    func succeedSetup(_ seti: inout Obj) {
        seti["status"] = "succeeded"
        seti["next_action"] = .null
        seti["last_setup_error"] = .null
        if let customerID = seti["customer"]?.stringValue, let pmID = seti["payment_method"]?.stringValue,
            paymentMethods[pmID]?["customer"] == .null
        {
            paymentMethods[pmID]?["customer"] = .string(customerID)
        }
    }
}

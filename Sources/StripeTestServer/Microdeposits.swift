import Foundation
import JSONRPC

/// A hand-entered US bank account's microdeposits, as Stripe's test mode verifies them (the test
/// accounts are told apart by their last four digits): 32 and 45 or SM11AA verify; 10 and 11 or SM33CC
/// exceed the attempts; 40 and 41 or SM44DD time out; anything else is a mismatch, three allowed for
/// amounts and ten for descriptor codes. Verified, a PaymentIntent is `processing`, then succeeds or
/// fails at once as the account says (000000000009 stays processing); a SetupIntent succeeds.
extension StripeTestState {
    /// Stripe's test accounts that fail the debit once verified, by last four digits.
    static let failingAccounts: [String: Failure] = [
        "1113": Failure("account_closed", "The customer's bank account has been closed."),
        "1116": Failure("no_account", "The customer's bank account could not be located."),
        "2227": Failure("insufficient_funds", "The customer's account has insufficient funds to cover this payment."),
        "3335": Failure(
            "debit_not_authorized", "The customer has notified their bank that this payment was unauthorized."),
        "4440": Failure("invalid_currency", "The bank account does not support this currency."),
    ]

    static let microdepositsNotSent = Failure(
        "payment_method_microdeposit_failed",
        "Microdeposits failed. Please check the account, institution and transit numbers provided.")
    static let microdepositTimeout = Failure(
        "payment_method_microdeposit_verification_timeout",
        "Microdeposit timeout. Customer hasn't verified their bank account within the required 10 day period.")
    static let microdepositAttemptsExceeded = Failure(
        "payment_method_microdeposit_verification_attempts_exceeded",
        "You have exceeded the number of allowed verification attempts.")

    private enum Verdict { case verified, exceeded, timedOut, mismatch }

    /// `POST /v1/{payment_intents|setup_intents}/{id}/verify_microdeposits`.
    func verifyMicrodeposits(_ call: inout Call) throws(APIError) -> JSONValue {
        let isSetup = call.request.path.hasPrefix("/v1/setup_intents/")
        var object = isSetup ? try setupIntent(call.id) : try paymentIntent(call.id)
        try Self.refuseClientSecretFromServerKey(call)
        if isSetup { try checkSetupClientSecret(object, call) } else { try checkClientSecret(object, call) }
        guard object["next_action"]?["type"]?.stringValue == "verify_with_microdeposits",
            var pending = pendingActions[call.id], let account = pending.account
        else {
            throw .invalid(
                "This \(isSetup ? "SetupIntent" : "PaymentIntent") does not require microdeposit verification.",
                code: isSetup ? "setup_intent_unexpected_state" : "payment_intent_unexpected_state")
        }
        let byAmounts: Bool
        var verdict: Verdict
        switch (call.params["amounts"]?.arrayValue, call.string("descriptor_code")) {
        case (_?, _?): throw .invalid("You may only specify one of these parameters: amounts, descriptor_code.")
        case (nil, nil): throw .missing("amounts")
        case (let amounts?, nil):
            let values = amounts.compactMap { $0.stringValue.flatMap { Int($0) } }.filter { $0 > 0 }.sorted()
            guard values.count == 2, amounts.count == 2 else {
                throw .invalid(
                    "Please provide exactly two positive integer amounts.", param: "amounts",
                    code: "payment_method_microdeposit_verification_amounts_invalid")
            }
            byAmounts = true
            verdict = [[32, 45]: .verified, [10, 11]: .exceeded, [40, 41]: .timedOut][values] ?? .mismatch
        case (nil, let code?):
            byAmounts = false
            verdict = ["SM11AA": .verified, "SM33CC": .exceeded, "SM44DD": .timedOut][code] ?? .mismatch
        }
        if verdict == .mismatch {
            // Stripe allows three failed tries with amounts and ten with descriptor codes.
            if byAmounts { pending.amountFailures += 1 } else { pending.codeFailures += 1 }
            pendingActions[call.id] = pending
            let remaining = byAmounts ? 3 - pending.amountFailures : 10 - pending.codeFailures
            guard remaining <= 0 else {
                let (what, param) = byAmounts ? ("amounts", "amounts") : ("descriptor code", "descriptor_code")
                throw .invalid(
                    "The \(what) provided do\(byAmounts ? "" : "es") not match the \(what) that \(byAmounts ? "were" : "was") sent to the bank account. You have \(remaining) verification attempts remaining.",
                    param: param,
                    code:
                        "payment_method_microdeposit_verification_\(byAmounts ? "amounts" : "descriptor_code")_mismatch"
                )
            }
            verdict = .exceeded
        }
        switch verdict {
        case .verified where isSetup:
            finish(&object, .succeed)
            pendingActions[call.id] = nil
        case .verified:
            finish(&object, .process)
            let outcome = Self.failingAccounts[account].map(Outcome.fail) ?? .succeed
            // 000000000009 stays processing; the others succeed or fail at once.
            pendingActions[call.id] = account == "0009" ? nil : PendingAction(dueAt: now, outcome: outcome)
        default:
            let failure = verdict == .timedOut ? Self.microdepositTimeout : Self.microdepositAttemptsExceeded
            finish(&object, .fail(failure))
            pendingActions[call.id] = nil
            store(object)
            throw APIError(
                status: 400, type: "invalid_request_error", message: failure.message, code: failure.code,
                extra: [isSetup ? "setup_intent" : "payment_intent": .object(object)])
        }
        store(object)
        return renderIntent(object, expand: call.expand)
    }
}

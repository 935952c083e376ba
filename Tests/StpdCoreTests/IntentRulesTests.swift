import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// STPPaymentHandler's status rules and the polls' steps, on intents decoded from JSON: no I/O.
struct IntentRulesTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    private func intent(
        _ status: String, pm: String? = "card", action: JSONValue? = nil, lastError: JSONValue? = nil
    ) throws -> PaymentIntent {
        var json: [String: JSONValue] = [
            "id": "pi_1", "client_secret": "pi_1_secret_x", "status": .string(status), "amount": 1000,
            "currency": "eur",
        ]
        if let pm { json["payment_method"] = ["id": "pm_1", "object": "payment_method", "type": .string(pm)] }
        json["next_action"] = action
        json["last_payment_error"] = lastError
        return try PaymentIntent(json: .object(json))
    }

    private func action(_ type: String, _ details: JSONValue = [:]) -> JSONValue {
        ["type": .string(type), .init(stringLiteral: type): details]
    }

    @Test func processingIsSuccessOnlyForTheDelayedNotificationMethods() throws {
        for pm in ["sepa_debit", "bacs_debit", "au_becs_debit", "us_bank_account"] {
            #expect(
                IntentRules.verdict(of: try intent("processing", pm: pm), entry: .confirm, at: .start) == .succeeded)
        }
        for pm in ["card", "ideal", "paypal"] {
            #expect(
                IntentRules.verdict(of: try intent("processing", pm: pm), entry: .confirm, at: .afterAction)
                    == .stillProcessing)
        }
        // A payment method of unknown type is not delayed.
        #expect(
            IntentRules.verdict(of: try intent("processing", pm: nil), entry: .confirm, at: .afterAction)
                == .stillProcessing)
    }

    @Test func requiresPaymentMethodIsAFailureCarryingTheLastError() throws {
        let declined: JSONValue = ["code": "card_declined", "message": "Your card was declined.", "type": "card_error"]
        guard
            case .failed(.paymentFailed(_, let data)) = IntentRules.verdict(
                of: try intent("requires_payment_method", lastError: declined), entry: .confirm, at: .afterAction)
        else {
            Issue.record("not a failure")
            return
        }
        #expect(data["paymentIntentStatus"] == "requires_payment_method")
        #expect(data["lastPaymentError"]?["code"] == "card_declined")
        #expect(data["reason"] == "paymentError")
        let unauthenticated: JSONValue = ["code": "payment_intent_authentication_failure"]
        guard
            case .failed(.paymentFailed(_, let data)) = IntentRules.verdict(
                of: try intent("requires_payment_method", lastError: unauthenticated), entry: .confirm,
                at: .afterAction)
        else {
            Issue.record("not a failure")
            return
        }
        #expect(data["reason"] == "authenticationFailed")
    }

    @Test func anAwaitingPollsDeadlineIsTheSDKsElseTheCodesExpiryElseAnHour() throws {
        let blik = try NextAction(json: action("blik_authorize"))
        #expect(IntentRules.deadline(awaiting: blik, from: t0) == t0.addingTimeInterval(60))
        let upi = try NextAction(json: action("upi_handle_redirect_or_display_qr_code", ["qr_code": ["expires_at": 1]]))
        #expect(IntentRules.deadline(awaiting: upi, from: t0) == t0.addingTimeInterval(300))
        let expiry = t0.addingTimeInterval(1800)
        let pix = try NextAction(
            json: action("pix_display_qr_code", ["expires_at": .int(Int64(expiry.timeIntervalSince1970))]))
        #expect(IntentRules.deadline(awaiting: pix, from: t0) == expiry)
        let far = try NextAction(
            json: action("pix_display_qr_code", ["expires_at": .int(Int64(t0.timeIntervalSince1970) + 9 * 86400)]))
        #expect(IntentRules.deadline(awaiting: far, from: t0) == t0.addingTimeInterval(86400))
        let klarna = try NextAction(json: action("klarna_display_qr_code"))
        #expect(IntentRules.deadline(awaiting: klarna, from: t0) == t0.addingTimeInterval(3600))
    }

    @Test func anAwaitingPollEndsAsPaymentSheetEndsIt() throws {
        var memory = IntentRules.Memory()
        let deadline = t0.addingTimeInterval(300)
        let upi = try intent("requires_action", pm: "upi", action: action("upi_await_notification"))
        let blik = try intent("requires_action", pm: "blik", action: action("blik_authorize"))
        func step(_ intent: PaymentIntent, at seconds: Double) -> IntentRules.Step {
            IntentRules.step(
                purpose: .awaitCustomer, entry: .confirm, start: t0, deadline: deadline, read: intent,
                at: t0.addingTimeInterval(seconds), memory: &memory)
        }
        // PollingViewModel.retryInterval: UPI every 10 s, BLIK every second (5 s past the first minute).
        #expect(IntentRules.startDelay(.awaitCustomer) == 5 && IntentRules.startDelay(.followUp) == 0)
        #expect(step(upi, at: 5) == .wait(seconds: 10))
        #expect(step(blik, at: 5) == .wait(seconds: 1))
        #expect(step(blik, at: 61) == .wait(seconds: 5))
        #expect(step(upi, at: 61) == .wait(seconds: 10))
        // The read that would pass the deadline waits for the last poll, 3 s after it.
        #expect(step(upi, at: 295) == .wait(seconds: 8))
        #expect(step(upi, at: 301) == .wait(seconds: 2))
        // Still requiring action at the last poll: canceled, as PaymentSheet's error screen ends it.
        #expect(step(upi, at: 303) == .finish(.canceled, nil))
        // Paid by the last poll: succeeded.
        #expect(step(try intent("succeeded", pm: "upi"), at: 303) == .finish(.succeeded, nil))
        // UPI counts as the SDK's success state only where nothing polls: a poll waits for the customer.
        #expect(step(try intent("succeeded", pm: "upi"), at: 0) == .finish(.succeeded, nil))
    }

    @Test func aFollowUpUsesTheSDKsBudgetsThenCancels() throws {
        var memory = IntentRules.Memory()
        func step(_ intent: PaymentIntent, at seconds: Double) -> IntentRules.Step {
            IntentRules.step(
                purpose: .followUp, entry: .confirm, start: t0, deadline: nil, read: intent,
                at: t0.addingTimeInterval(seconds),
                memory: &memory)
        }
        let threeDS = try intent(
            "requires_action", action: action("use_stripe_sdk", ["type": "stripe_3ds2_fingerprint"]))
        #expect(step(threeDS, at: 14) == .wait(seconds: 1))
        #expect(step(threeDS, at: 15) == .finish(.canceled, nil))
        let twint = try intent("requires_action", pm: "twint", action: action("redirect_to_url"))
        #expect(step(twint, at: 4) == .wait(seconds: 1))
        #expect(step(twint, at: 5) == .finish(.canceled, nil))
        // Any other still requiring action: _markChallengeCanceled at once.
        let ideal = try intent("requires_action", pm: "ideal", action: action("redirect_to_url"))
        #expect(step(ideal, at: 0) == .finish(.canceled, nil))
        // A voucher shown after a redirect is the SDK's success state.
        let voucher = try intent("requires_action", pm: "oxxo", action: action("oxxo_display_details"))
        #expect(step(voucher, at: 0) == .finish(.succeeded, nil))
    }

    @Test func processingThatIsNotSuccessIsPolledForThirtySecondsThenFails() throws {
        var memory = IntentRules.Memory()
        let processing = try intent("processing", pm: "card")
        func step(at seconds: Double) -> IntentRules.Step {
            IntentRules.step(
                purpose: .followUp, entry: .confirm, start: t0, deadline: nil, read: processing,
                at: t0.addingTimeInterval(seconds),
                memory: &memory)
        }
        #expect(step(at: 2) == .wait(seconds: 1))
        #expect(step(at: 31) == .wait(seconds: 1))
        guard case .finish(.failed, .paymentFailed(_, let data)) = step(at: 32) else {
            Issue.record("not failed")
            return
        }
        #expect(data["reason"] == "intentStatus")
    }

    @Test func aFailedReadIsRetriedOnceOrUntilTheDeadlineUnlessStripeRefusedIt() throws {
        var memory = IntentRules.Memory()
        let none: PaymentIntent? = nil
        #expect(
            IntentRules.step(
                purpose: .followUp, entry: .confirm, start: t0, deadline: nil, read: none, at: t0, memory: &memory)
                == .wait(seconds: 1))
        #expect(
            IntentRules.step(
                purpose: .followUp, entry: .confirm, start: t0, deadline: nil, read: none, at: t0, memory: &memory)
                == .finishUnread)
        memory = IntentRules.Memory()
        let deadline = t0.addingTimeInterval(60)
        for _ in 0..<3 {
            #expect(
                IntentRules.step(
                    purpose: .awaitCustomer, entry: .confirm, start: t0, deadline: deadline, read: none, at: t0,
                    memory: &memory)
                    == .wait(seconds: 1))
        }
        #expect(
            IntentRules.step(
                purpose: .awaitCustomer, entry: .confirm, start: t0, deadline: deadline, read: none, permanent: true,
                at: t0,
                memory: &memory) == .finishUnread)
    }
}

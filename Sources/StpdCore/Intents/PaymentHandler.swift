import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// The SDK's STPPaymentHandler for a PaymentIntent or a SetupIntent: confirm it (or take one
/// confirmed elsewhere), then handle the next action Stripe asks for, by the action's kind. The
/// calls that confirm an intent (`paymentIntent.confirm`, `setupIntent.confirm`, their
/// `handleNextAction` and `verifyMicrodeposits`, a payment context's managed PaymentIntent) all
/// come here, so a kind of next action is handled in one place for all of them.
public struct PaymentHandler: Sendable {
    let api: any PaymentsAPI
    let redirects: RedirectSessions

    public init(api: any PaymentsAPI, redirects: RedirectSessions) {
        self.api = api
        self.redirects = redirects
    }

    /// An intent as STPPaymentHandler left it: the result its completion would get, and what stpd
    /// did about the next action (`intent.nextAction`).
    public struct Handled<Intent: StripeIntent>: Sendable {
        public var intent: Intent
        public var result: IntentResult
        /// Why it failed.
        public var failure: Failure?
        /// Opened for a redirect kind.
        public var redirect: Shown<RedirectRecord>?
        /// Started for a kind that awaits the customer: the intent's record with its poll.
        public var poll: Shown<IntentRecord<Intent>>?

        mutating func fail(_ error: DomainError) {
            result = .failed
            failure = .domain(error)
        }
    }

    public func retrieve<Intent: StripeIntent>(_ type: Intent.Type, clientSecret: String) async throws -> Intent {
        try await Intent.retrieve(clientSecret: clientSecret, with: api)
    }

    /// Confirms the intent and handles its next action (`start`: start a redirect at once); `entry`
    /// is `managedPayment` for a payment context's.
    public func confirm<Intent: StripeIntent>(
        _ type: Intent.Type, _ params: PaymentIntentConfirmParams, for caller: Caller,
        start: RedirectSessions.StartOptions?,
        entry: IntentEntry = .confirm, voucher: VoucherHandling = .open
    ) async throws -> Handled<Intent> {
        let intent = try await Intent.confirm(params, with: api)
        return try await handle(
            intent, clientSecret: params.clientSecret, returnURL: params.returnURL, for: caller, start: start,
            entry: entry, voucher: voucher)
    }

    /// STPPaymentHandler's `handleNextAction(for…)`: an intent confirmed elsewhere (the merchant's server).
    public func handleNextAction<Intent: StripeIntent>(
        _ type: Intent.Type, clientSecret: String, returnURL: String?, for caller: Caller,
        start: RedirectSessions.StartOptions?,
        voucher: VoucherHandling = .open
    ) async throws -> Handled<Intent> {
        let intent = try await Intent.retrieve(clientSecret: clientSecret, with: api)
        return try await handle(
            intent, clientSecret: clientSecret, returnURL: returnURL, for: caller, start: start,
            entry: .handleNextAction, voucher: voucher)
    }

    /// Verifies a bank account's microdeposits; the intent that comes back is handled as a confirmation's.
    public func verifyMicrodeposits<Intent: StripeIntent>(
        _ type: Intent.Type, _ params: VerifyMicrodepositsParams, for caller: Caller
    ) async throws -> Handled<Intent> {
        let intent = try await Intent.verifyMicrodeposits(params, with: api)
        return try await handle(
            intent, clientSecret: params.clientSecret, returnURL: nil, for: caller, start: nil, entry: .confirm)
    }

    /// STPPaymentHandler's `_handleNextAction`: the status rules first (`IntentRules.outcomeTable`
    /// for the action's `entry`), then the next action by its kind (`NextAction.Kind`). `returnURL`
    /// is the confirmation's, which Cash App and Swish return to.
    public func handle<Intent: StripeIntent>(
        _ intent: Intent, clientSecret: String, returnURL: String?, for caller: Caller,
        start: RedirectSessions.StartOptions?,
        entry: IntentEntry, voucher: VoucherHandling = .open
    ) async throws -> Handled<Intent> {
        var handled = Handled(intent: intent, result: .succeeded)
        switch IntentRules.verdict(of: intent, entry: entry, at: .start) {
        case .succeeded: break
        case .canceled: handled.result = .canceled
        case .failed(let error): handled.fail(error)
        // At confirmation the SDK polls nothing: processing for a method that is not delayed fails.
        case .stillProcessing: handled.fail(IntentRules.failure(of: intent, reason: "intentStatus"))
        case .requiresAction:
            guard let action = intent.nextAction else {
                handled.fail(
                    .nextActionUnsupported(
                        type: "none", kind: NextAction.Kind.unsupported.rawValue,
                        detail: "the \(Intent.kind.noun) requires action but has no next action"))
                return handled
            }
            try await handleAction(action, of: intent, &handled, clientSecret, returnURL, caller, start, entry, voucher)
        }
        return handled
    }

    private func handleAction<Intent: StripeIntent>(
        _ action: NextAction, of intent: Intent, _ handled: inout Handled<Intent>, _ clientSecret: String,
        _ returnURL: String?, _ caller: Caller, _ start: RedirectSessions.StartOptions?, _ entry: IntentEntry,
        _ voucher: VoucherHandling
    ) async throws {
        switch action.kind {
        case .display:
            // isNextActionSuccessState: the customer pays (or verifies) later. A voucher the SDK opens
            // (VoucherDisplayHandler) and ends when it is closed; else the app shows the details.
            guard voucher == .open, let page = action.voucherPage else { break }
            try await openSession(
                IntentRedirect(voucherPage: page), for: intent, &handled, clientSecret, caller, start, entry)
        case .redirect:
            guard let target = IntentRedirect(action, confirmedWith: returnURL) else {
                return handled.fail(
                    .nextActionUnsupported(
                        type: action.rawType, kind: action.kind.rawValue,
                        detail: "\(action.rawType) lacks the URL to open"))
            }
            guard target.isComplete else {
                return handled.fail(
                    .returnURLRequired(
                        type: action.rawType, detail: "\(action.rawType) returns to the confirmation's returnURL"))
            }
            try await openSession(target, for: intent, &handled, clientSecret, caller, start, entry)
        case .awaitCustomer:
            let polled = try await Intent.polls(in: redirects.intents).start(
                for: caller, id: intent.id, clientSecret: clientSecret, intent: intent, purpose: .awaitCustomer,
                entry: entry)
            handled.result = .pending
            handled.poll = polled
        case .stripeSDK:
            handled.fail(Self.stripeSDKRefusal(action, returnURL: returnURL, entry: entry))
        case .unsupported:
            // (three_d_secure_redirect is a redirect kind: see NextAction.kind.)
            handled.fail(
                .nextActionUnsupported(
                    type: action.rawType, kind: action.kind.rawValue,
                    detail: "stpd cannot carry next action \(action.rawType)"))
        }
    }

    /// The `use_stripe_sdk` forms stpd cannot carry, each refused with what the app can do instead.
    /// Without a return URL, 6011: a confirmation with one gets a redirect from Stripe. With one,
    /// 6010: the native 3-D Secure 2 challenge (`stripe_3ds2_fingerprint`) comes only for an intent
    /// confirmed elsewhere with `use_stripe_sdk`; the hCaptcha `intent_confirmation_challenge`
    /// only from a client confirmation Stripe wants to check.
    static func stripeSDKRefusal(_ action: NextAction, returnURL: String?, entry: IntentEntry) -> DomainError {
        let sdkType = action.sdkType ?? "none"
        guard returnURL != nil || entry == .handleNextAction else {
            return .returnURLRequired(
                type: action.rawType,
                detail:
                    "Stripe asks for the SDK's native 3-D Secure (use_stripe_sdk \(sdkType)): confirm with a returnURL to get its redirect instead"
            )
        }
        let instead: String =
            switch sdkType {
            case "stripe_3ds2_fingerprint":
                entry == .handleNextAction
                    ? "confirm the intent on your server with return_url and without use_stripe_sdk (Stripe then answers redirect_to_url), or let stpd confirm it with a returnURL"
                    : "confirm again with a returnURL: stpd confirms without use_stripe_sdk, so Stripe answers with a redirect"
            case "intent_confirmation_challenge":
                "confirm the intent on your server instead, or let the customer pay in a browser with Stripe.js"
            default:
                "confirm the intent on your server with return_url, so that Stripe answers with a redirect"
            }
        return .nextActionUnsupported(
            type: action.rawType, kind: action.kind.rawValue,
            detail: "stpd has no native UI for use_stripe_sdk \(sdkType): \(instead)")
    }

    /// A redirect session on `target`, started at once with `start`: the action is pending until it ends.
    private func openSession<Intent: StripeIntent>(
        _ target: IntentRedirect, for intent: Intent, _ handled: inout Handled<Intent>, _ clientSecret: String,
        _ caller: Caller, _ start: RedirectSessions.StartOptions?, _ entry: IntentEntry
    ) async throws {
        var session = try await redirects.create(
            for: caller, intent: intent, clientSecret: clientSecret, target: target, followUpTimeout: nil, entry: entry)
        if let start {
            session = try await redirects.start(id: session.id, for: caller, mode: start.mode, opener: start.opener)
        }
        handled.result = .pending
        handled.redirect = session
    }
}

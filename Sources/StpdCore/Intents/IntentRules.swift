import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// STPPaymentHandler's rules for how an intent's state ends an action, read from stripe-ios `main`
/// of January 2026 (commit 5e5d6fb5): `STPPaymentHandler+IntentStatus.swift` (`_handleIntentStatus`,
/// `isNextActionSuccessState`, `_isProcessingIntentSuccess`), `+IntentRetrieval.swift`
/// (`_retrieveAndCheckIntentForCurrentAction`: the re-reading after an action, with
/// `PollingBudget.swift`'s budgets) and PaymentSheet's `PollingViewModel.swift` (the deadlines of the
/// polls that await the customer). Pure: the clock is the caller's.
public enum IntentRules {
    /// What an intent's status says, before its next action is looked at.
    public enum Verdict: Sendable, Hashable {
        case succeeded, canceled
        case failed(DomainError)
        /// `requires_action`: the next action decides.
        case requiresAction
        /// `processing` with a payment method whose funds are not delayed: a failure at
        /// confirmation, polled for 30 s after an action (`_shouldPollForProcessing`).
        case stillProcessing
    }

    /// What the outcome table (`outcomeTable`) says of `intent`'s status for an action begun at
    /// `entry`, read at `moment`.
    public static func verdict<Intent: StripeIntent>(
        of intent: Intent, entry: IntentEntry, at moment: IntentMoment
    ) -> Verdict {
        switch outcome(of: intent, entry: entry, at: moment) {
        case .succeeded: .succeeded
        case .canceled: .canceled
        case .failed(let reason): .failed(failure(of: intent, reason: reason))
        case .failedWithLastError: .failed(failure(of: intent, reason: lastErrorReason(intent)))
        case .nextAction: .requiresAction
        case .pollProcessing: .stillProcessing
        }
    }

    /// The SDK's error for a failed intent (its code is `reason`), as PaymentFailed.
    public static func failure<Intent: StripeIntent>(of intent: Intent, reason: String) -> DomainError {
        let kind = Intent.Naming.prefix
        let lastError = Intent.kind == .paymentIntent ? "lastPaymentError" : "lastSetupError"
        return .paymentFailed(
            detail: "the \(Intent.kind.noun) is \(intent.statusName)",
            data: [
                "\(kind)Status": .string(intent.statusName), lastError: intent.lastErrorFields ?? .null,
                "reason": .string(reason),
            ])
    }

    private static func lastErrorReason<Intent: StripeIntent>(_ intent: Intent) -> String {
        let code = intent.lastErrorFields?["code"]?.stringValue
        return code == "payment_intent_authentication_failure" || code == "setup_intent_authentication_failure"
            ? "authenticationFailed" : "paymentError"
    }

    // MARK: Polling

    /// How long PaymentSheet awaits the customer (`NextAction.ActionType.sdkPollingDeadline`); for the
    /// types the SDK does not poll, until the code expires (at most a day), else an hour (PayNow's).
    public static func deadline(awaiting action: NextAction?, from start: Date) -> Date {
        if let sdk = action?.type.sdkPollingDeadline { return start.addingTimeInterval(sdk.seconds) }
        if let expiresAt = action?.expiresAt { return min(expiresAt, start.addingTimeInterval(86_400)) }
        return start.addingTimeInterval(3600)
    }

    /// `PollingBudget(startDate:paymentMethodType:)`: how long the SDK re-reads an intent still in
    /// requires_action after a redirect: a card whose 3-D Secure is still under way 15 s, the wallets
    /// that confirm in their own app 5 s, any other not at all (`_markChallengeCanceled`).
    public static func followUpBudget<Intent: StripeIntent>(_ intent: Intent) -> Double {
        switch intent.paymentMethodType {
        case "card": intent.nextAction?.type == .useStripeSDK ? 15 : 0
        case "amazon_pay", "revolut_pay", "swish", "twint", "p24": 5
        default: 0
        }
    }

    /// `STPPaymentMethodType.supportsRefreshing` (stripe-ios `STPPaymentMethodEnums.swift`): Cash App
    /// and Klarna return from their own app past Stripe's redirect, so "the intent often isn't
    /// updated instantaneously": the SDK re-reads it through the refresh endpoint, which brings it
    /// up to date (`retrieveOrRefreshPaymentIntent`, `+Challenges.swift`).
    public static func refreshes(_ paymentMethodType: String?) -> Bool {
        paymentMethodType == "cashapp" || paymentMethodType == "klarna"
    }

    /// The SDK's `PollingBudget` for `processing` after an action.
    public static let processingBudget = 30.0

    /// How often a poll re-reads the intent. Awaiting the customer, PaymentSheet's
    /// `PollingViewModel.retryInterval`: UPI every 10 s, BLIK, PayNow and PromptPay every second;
    /// stpd polls the types PaymentSheet does not know every second too, and any poll past its
    /// first minute every 5 s at the least, so that many customers paying by QR code at once stay
    /// within Stripe's rate limit. A follow-up: every second (`PollingBudget.pollAfter`).
    public static func interval(awaiting action: NextAction.ActionType?, after elapsed: Double) -> Double {
        let sheet: Double =
            switch action {
            case .upiAwaitNotification, .upiHandleRedirectOrDisplayQRCode: 10
            default: 1
            }
        return elapsed < 60 ? sheet : max(sheet, 5)
    }

    /// PaymentSheet's polling screen starts polling 5 s after it shows the code
    /// (`PollingViewController.viewDidAppear`); a follow-up reads at once.
    public static func startDelay(_ purpose: IntentPollPurpose) -> Double { purpose == .awaitCustomer ? 5 : 0 }

    /// Once the deadline passes PaymentSheet stops, waits 3 s and polls once more
    /// (`PollingViewController.finishPolling`); still not paid then, the action ends canceled.
    public static let lastPollDelay = 3.0

    /// What a poll does next.
    public enum Step: Sendable, Hashable {
        case wait(seconds: Double)
        /// Finished: the verdict (never pending) and the failure of a failed one.
        case finish(IntentResult, DomainError?)
        /// Finished because the intent could not be read.
        case finishUnread
    }

    /// What a poll keeps between reads, in memory only: a restart begins these again.
    public struct Memory: Sendable, Hashable {
        public var processingSince: Date?
        public var failedReads = 0
        public init() {}
    }

    /// The next step of a poll with `purpose` for an action begun at `entry`, started at `start`
    /// (deadline `deadline` when it awaits the customer), after a read at `now` that gave `intent`
    /// (nil: the read failed, `permanent` when retrying cannot help).
    public static func step<Intent: StripeIntent>(
        purpose: IntentPollPurpose, entry: IntentEntry, start: Date, deadline: Date?, read intent: Intent?,
        permanent: Bool = false, at now: Date, memory: inout Memory
    ) -> Step {
        let elapsed = now.timeIntervalSince(start)
        guard let intent else {
            memory.failedReads += 1
            // The SDK retries a failed read once, or while its budget lasts.
            let retry = !permanent && (memory.failedReads == 1 || (deadline.map { now < $0 } ?? false))
            return retry ? .wait(seconds: 1) : .finishUnread
        }
        memory.failedReads = 0
        // PaymentSheet waits while the intent requires action, whatever the action says.
        if purpose == .awaitCustomer, intent.handlerStatus == .requiresAction {
            memory.processingSince = nil
            return awaiting(intent, start: start, deadline: deadline ?? now, at: now)
        }
        switch verdict(of: intent, entry: entry, at: .afterAction) {
        case .succeeded: return .finish(.succeeded, nil)
        case .canceled: return .finish(.canceled, nil)
        case .failed(let error): return .finish(.failed, error)
        case .stillProcessing:
            let since = memory.processingSince ?? now
            memory.processingSince = since
            guard now.timeIntervalSince(since) < processingBudget else {
                return .finish(.failed, failure(of: intent, reason: "intentStatus"))
            }
            return .wait(seconds: 1)
        case .requiresAction:
            memory.processingSince = nil
            // Still requiring action once the budget is spent: the customer left, canceled.
            return elapsed < followUpBudget(intent) ? .wait(seconds: 1) : .finish(.canceled, nil)
        }
    }

    /// Awaiting the customer: poll at the type's interval until the deadline, once more
    /// `lastPollDelay` after it, and then end canceled (PaymentSheet's error screen completes the
    /// action `.canceled`). Derived from the clock alone, so a restarted poll ends the same way.
    private static func awaiting<Intent: StripeIntent>(_ intent: Intent, start: Date, deadline: Date, at now: Date)
        -> Step
    {
        let lastPoll = deadline.addingTimeInterval(lastPollDelay)
        if now >= lastPoll { return .finish(.canceled, nil) }
        if now >= deadline { return .wait(seconds: lastPoll.timeIntervalSince(now)) }
        let wait = interval(awaiting: intent.nextAction?.type, after: now.timeIntervalSince(start))
        let next = now.addingTimeInterval(wait)
        return .wait(seconds: next < deadline ? wait : lastPoll.timeIntervalSince(now))
    }
}

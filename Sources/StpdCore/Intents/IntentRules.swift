import Foundation
import JSONRPC
import StpdProtocol
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

    /// `_handleIntentStatus`: requires_confirmation counts as succeeded (the app confirms on its
    /// server), processing only for the delayed-notification methods, requires_payment_method is a
    /// failure carrying Stripe's last error.
    public static func verdict<Intent: StripeIntent>(of intent: Intent) -> Verdict {
        switch intent.handlerStatus {
        case .succeeded, .requiresCapture, .requiresConfirmation: .succeeded
        case .canceled: .canceled
        case .requiresAction: .requiresAction
        case .processing:
            DelayedNotification.processingIsSuccess(for: intent.paymentMethodType) ? .succeeded : .stillProcessing
        case .requiresPaymentMethod: .failed(failure(of: intent, reason: lastErrorReason(intent)))
        case .unknown: .failed(failure(of: intent, reason: "intentStatus"))
        }
    }

    /// The SDK's notAuthenticated, paymentError or intentStatus error, as PaymentFailed.
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

    /// The SDK's `PollingBudget` for `processing` after an action.
    public static let processingBudget = 30.0

    /// The SDK polls every second (`PollingBudget.pollAfter`, PollingViewModel's `retryInterval`);
    /// stpd does so for the first minute, then every 5 s, so that many customers paying by QR code
    /// at once stay within Stripe's rate limit.
    public static func interval(after elapsed: Double) -> Double { elapsed < 60 ? 1 : 5 }

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

    /// The next step of a poll with `purpose` started at `start` (deadline `deadline` when it
    /// awaits the customer), after a read at `now` that gave `intent` (nil: the read failed,
    /// `permanent` when retrying cannot help).
    public static func step<Intent: StripeIntent>(
        purpose: IntentPollPurpose, start: Date, deadline: Date?, read intent: Intent?, permanent: Bool = false,
        at now: Date, memory: inout Memory
    ) -> Step {
        let elapsed = now.timeIntervalSince(start)
        guard let intent else {
            memory.failedReads += 1
            // The SDK retries a failed read once, or while its budget lasts.
            let retry = !permanent && (memory.failedReads == 1 || (deadline.map { now < $0 } ?? false))
            return retry ? .wait(seconds: interval(after: elapsed)) : .finishUnread
        }
        memory.failedReads = 0
        switch verdict(of: intent) {
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
            switch purpose {
            case .awaitCustomer:
                guard let deadline, now < deadline else {
                    return .finish(
                        .failed,
                        .intentPollTimedOut(
                            type: intent.nextAction?.rawType ?? "none", deadline: deadline ?? now,
                            status: intent.statusName))
                }
                return .wait(seconds: interval(after: elapsed))
            case .followUp:
                if let action = intent.nextAction, action.type.isSDKSuccessState || action.kind == .display {
                    return .finish(.succeeded, nil)
                }
                // Still requiring action once the budget is spent: the customer left, canceled.
                return elapsed < followUpBudget(intent) ? .wait(seconds: 1) : .finish(.canceled, nil)
            }
        }
    }
}

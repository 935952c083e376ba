import Foundation
import StripeAPI

/// Where an action began: which of STPPaymentHandler's completions judges how it ends. The SDK
/// checks the intent it ends with against a success test of the entry point's own
/// (`makePaymentIntentWrappedCompletion(includeRequiresConfirmation:)`), so the same status can be a
/// success for one entry point and a failure for another.
public enum IntentEntry: String, Codable, Sendable, CaseIterable {
    /// `confirmPaymentIntent` / `confirmSetupIntent`: `paymentIntent.confirm`, `setupIntent.confirm`,
    /// and `verifyMicrodeposits` (whose intent comes back confirmed).
    case confirm
    /// `handleNextAction(paymentIntentClientSecret:…)`: an intent confirmed on the merchant's server
    /// (`…handleNextAction`, and a session of `redirect.create` for an intent).
    case handleNextAction
    /// `paymentContext.requestPayment`'s managed PaymentIntent: stpd confirms it as
    /// `confirmPaymentIntent` does, so the confirm rules judge it.
    case managedPayment
}

/// When a status is read: as the confirmation (or retrieval) answered, or re-read after the action
/// (a redirect's follow-up, a poll awaiting the customer).
public enum IntentMoment: String, Sendable, CaseIterable {
    case start, afterAction
}

/// A status as the rules tell statuses apart.
public enum IntentStatusCase: String, Sendable, CaseIterable {
    case succeeded, requiresCapture, requiresConfirmation
    /// `processing` with a delayed-notification method (SEPA, Bacs, BECS, US bank account).
    case processingDelayed
    /// `processing` with any other method (or none known).
    case processing
    case canceled, requiresPaymentMethod
    /// `requires_action` whose next action is the SDK's success state (`isNextActionSuccessState`:
    /// a voucher, microdeposits, BLIK, UPI) or one stpd only shows (bank transfer instructions).
    case requiresActionDone
    case requiresAction
    case unknown

    public init<Intent: StripeIntent>(_ intent: Intent) {
        switch intent.handlerStatus {
        case .succeeded: self = .succeeded
        case .requiresCapture: self = .requiresCapture
        case .requiresConfirmation: self = .requiresConfirmation
        case .processing:
            self =
                DelayedNotification.processingIsSuccess(for: intent.paymentMethodType)
                ? .processingDelayed : .processing
        case .canceled: self = .canceled
        case .requiresPaymentMethod: self = .requiresPaymentMethod
        case .requiresAction:
            let done = intent.nextAction.map { $0.type.isSDKSuccessState || $0.kind == .display } ?? false
            self = done ? .requiresActionDone : .requiresAction
        case .unknown: self = .unknown
        }
    }
}

/// What a row says an action's end is.
public enum IntentOutcome: Sendable, Hashable {
    case succeeded, canceled
    /// PaymentFailed with `data.reason` (the SDK's error code: `requiresPaymentMethod`,
    /// `intentStatus`, `unexpected`).
    case failed(reason: String)
    /// PaymentFailed carrying Stripe's last error (`authenticationFailed` or `paymentError`).
    case failedWithLastError
    /// At the start, the next action decides; after it, the follow-up budget or the poll's deadline.
    case nextAction
    /// Re-read every second for 30 s, then `failed(intentStatus)`.
    case pollProcessing
}

/// One row of the outcome table: for these intents, entry points and moments, this status ends so.
public struct IntentOutcomeRow: Sendable {
    public var intents: Set<IntentKind>
    public var entries: Set<IntentEntry>
    public var moments: Set<IntentMoment>
    public var status: IntentStatusCase
    public var outcome: IntentOutcome
    /// Where the SDK says so: stripe-ios `main` of January 2026 (commit 5e5d6fb5), file and line.
    public var sdk: String

    public func matches(_ kind: IntentKind, _ entry: IntentEntry, _ moment: IntentMoment, _ status: IntentStatusCase)
        -> Bool
    {
        intents.contains(kind) && entries.contains(entry) && moments.contains(moment) && self.status == status
    }
}

extension IntentRules {
    private static let both: Set<IntentKind> = [.paymentIntent, .setupIntent]
    private static let pi: Set<IntentKind> = [.paymentIntent]
    private static let si: Set<IntentKind> = [.setupIntent]
    private static let anyEntry = Set(IntentEntry.allCases)
    private static let confirming: Set<IntentEntry> = [.confirm, .managedPayment]
    private static let anyMoment = Set(IntentMoment.allCases)

    /// STPPaymentHandler's outcome for every status, per entry point and moment, PaymentIntents and
    /// SetupIntents apart; the first row that matches decides. Files are under
    /// `StripePayments/StripePayments/Source/PaymentHandler/`, `STPPaymentHandler` shortened to `STPPH`.
    /// Where stpd differs on purpose, docs/sdk-differences.md says so (it has no UI: BLIK and UPI
    /// are polled rather than succeeding at once, bank transfer instructions are shown).
    public static let outcomeTable: [IntentOutcomeRow] = [
        .init(
            intents: both, entries: anyEntry, moments: anyMoment, status: .succeeded, outcome: .succeeded,
            sdk: "STPPH+IntentStatus.swift:54 (_handleIntentStatus); STPPH+PaymentAPI.swift:38, :49 (in success state)"),
        .init(
            intents: both, entries: anyEntry, moments: anyMoment, status: .canceled, outcome: .canceled,
            sdk: "STPPH+IntentStatus.swift:61"),
        .init(
            intents: both, entries: anyEntry, moments: anyMoment, status: .unknown,
            outcome: .failed(reason: "unexpected"),
            sdk: "STPPH+IntentStatus.swift:26 (unexpectedErrorCode)"),
        .init(
            intents: both, entries: anyEntry, moments: [.start], status: .requiresPaymentMethod,
            outcome: .failed(reason: "requiresPaymentMethod"),
            sdk: "STPPaymentHandler.swift:316 (_handleNextAction(forPayment:)), :352 (for: setupIntent)"),
        .init(
            intents: both, entries: anyEntry, moments: [.afterAction], status: .requiresPaymentMethod,
            outcome: .failedWithLastError,
            sdk: "STPPH+IntentStatus.swift:35, :68 (_handleRequiresPaymentMethodStatus)"),
        .init(
            intents: both, entries: anyEntry, moments: [.start], status: .requiresActionDone, outcome: .nextAction,
            sdk:
                "STPPH+IntentStatus.swift:41; STPPaymentHandler.swift:341, :377, :382 (_handleAuthenticationForCurrentAction)"
        ),
        .init(
            intents: both, entries: anyEntry, moments: [.afterAction], status: .requiresActionDone,
            outcome: .succeeded,
            sdk: "STPPH+IntentRetrieval.swift:299 (_handleRequiresActionCommon); STPPH+IntentStatus.swift:118"),
        .init(
            intents: both, entries: anyEntry, moments: anyMoment, status: .requiresAction, outcome: .nextAction,
            sdk: "STPPH+IntentStatus.swift:41; STPPH+IntentRetrieval.swift:308 (PollingBudget), :322 (then canceled)"),
        // PaymentIntents
        .init(
            intents: pi, entries: anyEntry, moments: anyMoment, status: .requiresCapture, outcome: .succeeded,
            sdk: "STPPH+IntentStatus.swift:57; STPPH+PaymentAPI.swift:39"),
        .init(
            intents: pi, entries: [.handleNextAction], moments: [.start], status: .requiresConfirmation,
            outcome: .failed(reason: "intentStatus"),
            sdk:
                "STPPH+PaymentAPI.swift:301 (_handleNextActionForPaymentIntentImpl: \"Confirm the PaymentIntent on the backend\")"
        ),
        .init(
            intents: pi, entries: [.handleNextAction], moments: [.afterAction], status: .requiresConfirmation,
            outcome: .succeeded,
            sdk: "STPPH+PaymentAPI.swift:40, :299 (includeRequiresConfirmation: true)"),
        .init(
            intents: pi, entries: confirming, moments: anyMoment, status: .requiresConfirmation,
            outcome: .failed(reason: "intentStatus"),
            sdk: "STPPH+PaymentAPI.swift:65, :69, :151 (_confirmPaymentIntentImpl: includeRequiresConfirmation false)"),
        .init(
            intents: pi, entries: anyEntry, moments: anyMoment, status: .processingDelayed, outcome: .succeeded,
            sdk: "STPPH+IntentStatus.swift:45, :148 (_isProcessingIntentSuccess); STPPH+PaymentAPI.swift:41"),
        .init(
            intents: pi, entries: anyEntry, moments: [.start], status: .processing,
            outcome: .failed(reason: "intentStatus"),
            sdk: "STPPH+IntentStatus.swift:48"),
        .init(
            intents: pi, entries: anyEntry, moments: [.afterAction], status: .processing, outcome: .pollProcessing,
            sdk: "STPPH+IntentRetrieval.swift:92, :93 (30 s), :278 (_shouldPollForProcessing)"),
        // SetupIntents
        .init(
            intents: si, entries: anyEntry, moments: anyMoment, status: .requiresConfirmation,
            outcome: .failed(reason: "intentStatus"),
            sdk:
                "STPPH+PaymentAPI.swift:48 (isSetupIntentInSuccessState), :90, :440 (_handleNextActionForSetupIntentImpl)"
        ),
        .init(
            intents: si, entries: anyEntry, moments: anyMoment, status: .processingDelayed,
            outcome: .failed(reason: "intentStatus"),
            sdk: "StripeIntent.swift:192 (a SetupIntent's isProcessingSuccess is false); STPPH+IntentStatus.swift:48"),
        .init(
            intents: si, entries: anyEntry, moments: [.start], status: .processing,
            outcome: .failed(reason: "intentStatus"),
            sdk: "StripeIntent.swift:192; STPPH+IntentStatus.swift:48"),
        .init(
            intents: si, entries: anyEntry, moments: [.afterAction], status: .processing, outcome: .pollProcessing,
            sdk: "STPPH+IntentRetrieval.swift:180, :181 (30 s), :278 (_shouldPollForProcessing)"),
    ]

    /// The table's outcome for `intent` (a status no row covers fails as the SDK's unexpected error).
    public static func outcome<Intent: StripeIntent>(
        of intent: Intent, entry: IntentEntry, at moment: IntentMoment
    ) -> IntentOutcome {
        let status = IntentStatusCase(intent)
        return outcomeTable.first { $0.matches(Intent.kind, entry, moment, status) }?.outcome
            ?? .failed(reason: "unexpected")
    }
}

/// A Source redirect's follow-up (STPSourcePoller, `StripePayments/…/Internal/API Bindings/
/// STPSourcePoller.swift` at 0a395ee): a Source still `pending` is polled until the timeout; any
/// other status (`chargeable`, `consumed`, `failed`, `canceled`) ends the poll, and the outcome is
/// that status (`shouldContinuePollingSource`). The app decides what each means: a
/// chargeable Source is charged on its server.
public enum SourceOutcomes {
    public static func continuesPolling(_ status: Source.Status?) -> Bool { status == .pending }
}

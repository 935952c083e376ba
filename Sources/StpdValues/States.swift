// Where each of the daemon's objects stands: the records store these, the domain switches on
// them, and the contract's views carry them and its schemas list their cases. They are the one
// vocabulary StpdCore and StpdProtocol share (docs/architecture.md), so a change to one is a
// change to both the stored forms (StoredFormTests pins them) and the contract.

public enum CustomerSessionStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case open, closed
}

public enum PaymentContextStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case open, closed
}

/// The SDK's redirect context states.
public enum RedirectStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case notStarted, inProgress, completed, cancelled
}

/// A Source poll: `paused` while the app is in the background, `finished` reported once,
/// `stopped` never reports.
public enum PollStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case polling, paused, finished, stopped
}

/// Where an app request is in its life. Each state is also the event announcing it
/// (`AppRequestEvent.entered`: `appRequest.pending`, `appRequest.answered`, ...).
public enum AppRequestState: String, Codable, Sendable, Hashable, CaseIterable {
    /// Waiting for the app's answer.
    case pending
    /// The app answered, with a result or an error.
    case answered
    /// No answer came before the deadline; the asker got AppRequestTimedOut.
    case timedOut
    /// The asker stopped waiting (its task was cancelled) before an answer came.
    case cancelled
    /// Its asker is gone: the daemon process that asked stopped or died (found at the next start,
    /// or in a fleet by another daemon once the asker's lease expired).
    case abandoned
}

/// STPPaymentContext's internal request state.
public enum PaymentRequestState: String, Codable, Sendable, Hashable, CaseIterable {
    case none, showingRequestedViewController, requestingPayment
}

/// What a waiting requestPayment needs: a screen the SDK would show, a redirect's outcome, or the
/// customer paying elsewhere (the PaymentIntent's poll: `paymentIntent.*` events carry the details).
public enum PaymentContextNeed: String, Codable, Sendable, Hashable, CaseIterable {
    case paymentOption, shippingAddress, redirect, nextAction
}

/// The delegate callback a pending action stands for.
public enum PendingActionKind: String, Codable, Sendable, Hashable, CaseIterable {
    case didCreatePaymentResult, didUpdateShippingAddress
}

/// The app's completion of a pending action: a payment status for didCreatePaymentResult,
/// valid or invalid for didUpdateShippingAddress.
public enum PendingActionAnswer: String, Codable, Sendable, Hashable, CaseIterable {
    case success, error, userCancellation, valid, invalid

    /// The answers a pending action of `kind` takes.
    public static func allowed(for kind: PendingActionKind) -> [PendingActionAnswer] {
        kind == .didCreatePaymentResult ? [.success, .error, .userCancellation] : [.valid, .invalid]
    }
}

/// STPPaymentStatus: how a requestPayment finished.
public enum PaymentStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case success, error, userCancellation
}

/// How STPPaymentHandler ended an action (`STPPaymentHandlerActionStatus`), or `pending` while stpd
/// carries it on: a redirect session to open, or a poll until the customer pays elsewhere.
public enum IntentResult: String, Codable, Sendable, Hashable, CaseIterable {
    case succeeded, canceled, failed, pending
}

public enum IntentPollStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case polling, finished, stopped
}

/// Why stpd polls an intent.
public enum IntentPollPurpose: String, Codable, Sendable, Hashable, CaseIterable {
    /// The customer pays elsewhere (a QR code, a banking app): until the intent leaves
    /// requires_action or the deadline passes.
    case awaitCustomer
    /// A redirect session completed: the SDK's re-reading of the intent, with its short budgets.
    case followUp
}

/// How a redirect session is started: the SDK's three `STPRedirectContext` start variants.
public enum RedirectMode: String, Codable, Sendable, CaseIterable {
    /// `startRedirectFlow`: the native app URL if there is one (Alipay, WeChat Pay), else the
    /// redirect URL; completes on the return URL or when the app comes to the foreground.
    case automatic
    /// `startSafariViewControllerRedirectFlow`: the app shows the page itself; completes only on
    /// the return URL.
    case inApp
    /// `startSafariAppRedirectFlow`: an external browser; completes on the return URL or when the
    /// app comes to the foreground.
    case browser
}

/// Who opens the URL a started session returns.
public enum RedirectOpener: String, Codable, Sendable, CaseIterable {
    /// The app opens `openURL` (the default).
    case app
    /// stpd runs the configured STPD_URL_OPENER command with the URL (off unless configured).
    case daemon
}

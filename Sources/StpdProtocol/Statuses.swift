import JSONRPC

/// Where each of the daemon's objects stands. The views carry these, the contract's schemas list
/// their cases, and the domain switches on them: a misspelled status does not compile.
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

extension JSONSchema {
    /// A string schema listing a status enum's cases.
    static func cases<T: CaseIterable & RawRepresentable<String>>(of _: T.Type, _ description: String) -> JSONSchema {
        .enumeration(T.allCases.map(\.rawValue), description)
    }
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

/// STPPaymentStatus: how a requestPayment finished.
public enum PaymentStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case success, error, userCancellation
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

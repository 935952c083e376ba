// What a confirmation does with a voucher and what the app reports of its browser: choices the
// contract takes and the domain acts on as they are (docs/architecture.md).

/// What a confirmation does with a voucher (OXXO, Boleto, Konbini, Multibanco).
public enum VoucherHandling: String, Codable, Sendable, CaseIterable {
    /// As the SDK's VoucherDisplayHandler: a redirect session on `hosted_voucher_url` (started with
    /// `start`, e.g. `opener: daemon`); the action ends when the customer closes it (the default).
    case open
    /// The app shows the voucher itself from `nextAction.details`: `succeeded` at once.
    case display
}

/// What the app's browser or web view did, which only the app can see (`redirect.report`): the
/// events of the SDK's Safari view and of its attempt to open a native app.
public enum RedirectReportOutcome: String, Codable, Sendable, CaseIterable {
    /// The customer closed the page the app shows (the SDK's Safari view "Done"): a Source's session
    /// completes with RedirectCancelled, the SDK's code 80; an intent's is re-read first, as
    /// STPPaymentHandler does, and its outcome is canceled only if it still requires action.
    case closed
    /// The page's first load failed: on a stripe.com host it completes with RedirectLoadFailed, the
    /// SDK's code 40; elsewhere it is ignored, as in the SDK.
    case loadFailed
    /// The native app URL could not be opened: automatic mode falls back to the web page
    /// (`redirect.fallback`); WeChat Pay completes with RedirectOpenFailed.
    case nativeOpenFailed
}

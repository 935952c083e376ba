import StpdCore

/// Resolves a call's `returnURL` at the edge: `"loopback"` becomes a loopback return issued for
/// the call (`RedirectSessions.resolveReturnURL`), its page naming the app as stpd names the
/// merchant (`STPD_MERCHANT_NAME`, else the calling app's name).
struct ReturnURLs: Sendable {
    let redirects: RedirectSessions
    let merchantName: String?

    func resolve<T: Sendable>(
        _ returnURL: String?, for context: CallContext, _ body: (String?) async throws -> T
    ) async throws -> T {
        try await redirects.resolveReturnURL(returnURL, appName: appName(context), body)
    }

    func appName(_ context: CallContext) -> String? {
        MerchantName.resolve(given: nil, configured: merchantName, caller: context.caller)
    }
}

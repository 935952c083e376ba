import Foundation
import JSONRPC
import StpdProtocol

/// What stpd stores of a redirect session: the view's fields plus the client secret it needs for
/// the follow-up, and the lookup key its return URL is filed under while it is in progress (the
/// store orders a key's records by when they were filed: the earliest started wins a URL).
struct RedirectRecord: ViewedInDomain {
    typealias Status = RedirectStatus
    enum Kind: String, Codable, Sendable {
        case source, paymentIntent, setupIntent

        init(_ intent: IntentKind) {
            switch intent {
            case .paymentIntent: self = .paymentIntent
            case .setupIntent: self = .setupIntent
            }
        }
    }

    var id: String
    var owner: UInt32
    var status = Status.notStarted
    var kind: Kind
    var sourceId: String?
    var paymentIntentId: String?
    var setupIntentId: String?
    var clientSecret: String
    var isWeChat = false
    var nativeURL: String?
    var redirectURL: String?
    var returnURL: String?
    /// Set when `returnURL` is a loopback return stpd issued: stpd's listener completes it.
    var loopback: LoopbackReturn?
    var mode: RedirectMode?
    var opener: RedirectOpener?
    var openURL: String?
    /// The key its return URL is filed under (`ReturnURL.lookupKeys`), chosen when it starts.
    var returnKey: String?
    var followUpTimeout: Double
    /// For an intent, the entry point of the action its follow-up ends (`IntentRules.outcomeTable`);
    /// nil for a session of `redirect.create`, whose intent was confirmed elsewhere: handleNextAction's.
    var entry: IntentEntry?
    /// For an intent, its payment method's type when the session was made: the follow-up's first
    /// read refreshes Cash App and Klarna (`IntentRules.refreshes`).
    var paymentMethodType: String?
    /// Requested before the follow-up's reads: Alipay's return URL (`NextAction.alipayReturnPing`).
    var pingURL: String?
    var completion: Completion?
    var outcome: RedirectOutcome?
    var createdAt: Date
    var updatedAt: Date

    /// Whether app.foreground completes it. The SDK observes becoming active in its external-browser
    /// flow and in its automatic flow while a native app is open; automatic without a native URL (or
    /// after it failed to open) runs the in-app browser flow, which completes on the return URL only.
    /// A page stpd opened itself (`opener: daemon`, a browser of the desktop's) is the SDK's external
    /// browser (`startSafariAppRedirectFlow`), whatever the mode: the app sees no page to report on.
    var completesOnForeground: Bool {
        guard status == .inProgress else { return false }
        return mode == .browser || opener == .daemon || (mode == .automatic && opensNativeApp)
    }

    /// Started in automatic mode on its native URL (and not fallen back to the web page).
    var opensNativeApp: Bool { openURL != nil && openURL == nativeURL }

    /// The app shows the web page itself: the SDK's in-app browser, which can be closed or fail to load.
    var showsWebPage: Bool {
        opener != .daemon && (mode == .inApp || (mode == .automatic && !opensNativeApp))
    }

    /// Completed normally and the follow-up has not reported yet.
    var awaitsOutcome: Bool { status == .completed && outcome == nil && completion?.error == nil }

    /// How it completed (`RedirectSessionView.Completion` says what each member means).
    struct Completion: Codable, Sendable {
        var trigger: String
        var url: String?
        var error: Failure?
        var at: String
    }

    func view(_ failures: any FailureRenderer) -> RedirectSessionView {
        RedirectSessionView(
            id: id, status: status, kind: kind.rawValue, sourceId: sourceId, paymentIntentId: paymentIntentId,
            setupIntentId: setupIntentId, nativeURL: nativeURL, redirectURL: redirectURL, returnURL: returnURL,
            mode: mode, opener: opener,
            openURL: openURL, followUpTimeout: followUpTimeout,
            completion: completion.map {
                .init(trigger: $0.trigger, url: $0.url, error: $0.error.map(failures.render), at: $0.at)
            },
            outcome: outcome.map {
                .init(
                    result: $0.result, intentResult: $0.intentResult, error: $0.error.map(failures.render),
                    object: $0.object, at: $0.at)
            },
            createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
    }

    static let kind = ObjectKind.redirect
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static let schemaVersion = 1
    static let removed: RedirectEvent? = .removed
    static let foregroundKey = LookupKey.make("redirect", "completesOnForeground")

    var queryStatus: String? { status.rawValue }
    /// Its follow-up runs in this process.
    var isLive: Bool { awaitsOutcome }
    /// Cancelled, completed with its outcome (or an error), or never started.
    var isFinished: Bool { status != .inProgress && !awaitsOutcome }
    var isTerminal: Bool { status == .cancelled || (status == .completed && !awaitsOutcome) }
    var lookupKeys: [String] {
        // A loopback token stays findable once used, so its page can say so.
        var keys = loopback.map { [$0.lookupKey] } ?? []
        if let loopback, waitsForLoopback { keys.append(LoopbackReturn.waitingKey(loopback.instance)) }
        guard status == .inProgress else { return keys }
        return keys + (returnKey.map { [$0] } ?? []) + (completesOnForeground ? [Self.foregroundKey] : [])
    }

    /// A loopback session waits for the customer's browser from its creation: the app may open
    /// `redirectURL` itself without `redirect.start` (the token names the session, so no other can
    /// take its return).
    var waitsForLoopback: Bool { loopback != nil && (status == .notStarted || status == .inProgress) }
}

/// What a redirect session's follow-up found (`RedirectSessionView.Outcome` says what each member
/// means), as the session keeps it and tells those who wait for it.
public struct RedirectOutcome: Codable, Sendable, Hashable {
    public var result: String
    public var intentResult: IntentResult?
    public var error: Failure?
    public var object: JSONValue?
    public var at: String
}

import Foundation
import JSONRPC
import StpdValues

/// What stpd stores of a redirect session: the view's fields plus the client secret it needs for
/// the follow-up, and the lookup key its return URL is filed under while it is in progress (the
/// store orders a key's records by when they were filed: the earliest started wins a URL). Public
/// for the edge, which shows it as the contract's `RedirectSessionView`.
public struct RedirectRecord: DurableRecord {
    public typealias Status = RedirectStatus
    public enum Kind: String, Codable, Sendable {
        case source, paymentIntent, setupIntent

        init(_ intent: IntentKind) {
            switch intent {
            case .paymentIntent: self = .paymentIntent
            case .setupIntent: self = .setupIntent
            }
        }
    }

    public internal(set) var id: String
    public internal(set) var owner: UInt32
    public internal(set) var status = Status.notStarted
    public internal(set) var kind: Kind
    public internal(set) var sourceId: String?
    public internal(set) var paymentIntentId: String?
    public internal(set) var setupIntentId: String?
    var clientSecret: String
    var isWeChat = false
    public internal(set) var nativeURL: String?
    public internal(set) var redirectURL: String?
    public internal(set) var returnURL: String?
    /// Set when `returnURL` is a loopback return stpd issued: stpd's listener completes it.
    var loopback: LoopbackReturn?
    public internal(set) var mode: RedirectMode?
    public internal(set) var opener: RedirectOpener?
    public internal(set) var openURL: String?
    /// The key its return URL is filed under (`ReturnURL.lookupKeys`), chosen when it starts.
    var returnKey: String?
    public internal(set) var followUpTimeout: Double
    /// For an intent, the entry point of the action its follow-up ends (`IntentRules.outcomeTable`);
    /// nil for a session of `redirect.create`, whose intent was confirmed elsewhere: handleNextAction's.
    var entry: IntentEntry?
    /// For an intent, its payment method's type when the session was made: the follow-up's first
    /// read refreshes Cash App and Klarna (`IntentRules.refreshes`).
    var paymentMethodType: String?
    /// Requested before the follow-up's reads: Alipay's return URL (`NextAction.alipayReturnPing`).
    var pingURL: String?
    public internal(set) var completion: Completion?
    public internal(set) var outcome: RedirectOutcome?
    public internal(set) var createdAt: Date
    public var updatedAt: Date

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
    public struct Completion: Codable, Sendable {
        public internal(set) var trigger: String
        public internal(set) var url: String?
        public internal(set) var error: Failure?
        public internal(set) var at: String
    }

    public func shown(_ views: any RecordViews) throws -> PublicState { try views.redirect(self) }
    public func publicState(_ views: any RecordViews) throws -> JSONValue { try shown(views).json }

    public static let kind = ObjectKind.redirect
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    public static let schemaVersion = 1
    public static let removed: RedirectEvent? = .removed
    static let foregroundKey = LookupKey.make("redirect", "completesOnForeground")

    public var queryStatus: String? { status.rawValue }
    /// Its follow-up runs in this process.
    public var isLive: Bool { awaitsOutcome }
    /// Cancelled, completed with its outcome (or an error), or never started.
    public var isFinished: Bool { status != .inProgress && !awaitsOutcome }
    public var isTerminal: Bool { status == .cancelled || (status == .completed && !awaitsOutcome) }
    public var lookupKeys: [String] {
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

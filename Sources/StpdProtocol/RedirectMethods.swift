import JSONRPC
import StpdValues

let redirectErrors: [ErrorDeclaration] =
    [StpdErrors.notFound, StpdErrors.invalidState, StpdErrors.redirectUnavailable, StpdErrors.tooManyPolls]
    + stripeCallErrors

/// `redirect.*`: redirect sessions (the SDK's STPRedirectContext).
public enum RedirectCreate: RPCMethod {
    public struct Params: Codable, Sendable {
        public struct SourceRef: Codable, Sendable {
            public var id: String
            public var clientSecret: String?
            public init(id: String, clientSecret: String? = nil) {
                self.id = id
                self.clientSecret = clientSecret
            }
        }
        public struct PaymentIntentRef: Codable, Sendable {
            public var clientSecret: String
            public init(clientSecret: String) { self.clientSecret = clientSecret }
        }
        /// What the session redirects for: the schema takes exactly one of `source` and `paymentIntent`.
        public enum Target: Sendable {
            case source(SourceRef)
            case paymentIntent(PaymentIntentRef)
        }
        public var target: Target
        /// Seconds the follow-up poll of a Source runs after completion (default STPD_REDIRECT_POLL_TIMEOUT).
        public var followUpTimeout: Double?
        public init(_ target: Target, followUpTimeout: Double? = nil) {
            self.target = target
            self.followUpTimeout = followUpTimeout
        }

        enum CodingKeys: String, CodingKey { case source, paymentIntent, followUpTimeout }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            followUpTimeout = try container.decodeIfPresent(Double.self, forKey: .followUpTimeout)
            switch try container.exactlyOne(of: [.source, .paymentIntent]) {
            case .paymentIntent:
                target = .paymentIntent(try container.decode(PaymentIntentRef.self, forKey: .paymentIntent))
            default: target = .source(try container.decode(SourceRef.self, forKey: .source))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch target {
            case .source(let source): try container.encode(source, forKey: .source)
            case .paymentIntent(let intent): try container.encode(intent, forKey: .paymentIntent)
            }
            try container.encodeIfPresent(followUpTimeout, forKey: .followUpTimeout)
        }
    }
    public typealias Result = RedirectSessionView
    public static let name = "redirect.create"
    public static let summary =
        "Opens a redirect session for a Source or a PaymentIntent (fetched fresh), as STPRedirectContext's initializers."
    public static let description: String? = """
        A Source qualifies when its flow is redirect (or it is WeChat Pay) and its status pending or chargeable; \
        a PaymentIntent when its status is requires_action with a redirect_to_url next action whose url and \
        return_url parse. Otherwise RedirectUnavailable says why. The Source's client secret may be omitted \
        when the Source was created or retrieved through stpd.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "source": .object(["id": sourceID, "clientSecret": clientSecretSchema], required: ["id"]),
            "paymentIntent": .object(["clientSecret": paymentIntentSecret], required: ["clientSecret"]),
            "followUpTimeout": .number("Seconds to poll a Source after completion (default 10)", minimum: 0),
        ]
    ).exactlyOne(of: ["source", "paymentIntent"])
    public static let resultSchema = JSONSchema.ref("RedirectSession")
    public static let errors = redirectErrors
}

public enum RedirectStart: RPCMethod {
    public struct Params: Codable, Sendable {
        public var session: String
        public var mode: RedirectMode?
        public var opener: RedirectOpener?
        public init(session: String, mode: RedirectMode? = nil, opener: RedirectOpener? = nil) {
            self.session = session
            self.mode = mode
            self.opener = opener
        }
    }
    public typealias Result = RedirectSessionView
    public static let name = "redirect.start"
    public static let summary = "Starts a session (notStarted → inProgress) and answers with the URL to open."
    public static let description: String? = """
        mode automatic (default) opens a native app URL when there is one, completing on the return URL \
        or app.foreground; without one (or when opening it fails) it runs the in-app flow on the redirect \
        URL, which completes on the return URL only (WeChat Pay instead completes with RedirectOpenFailed). \
        inApp completes only on the return URL; browser opens the redirect URL and completes on either. \
        With opener app (default) the app opens openURL and reports what its browser did with \
        redirect.report; with opener daemon, stpd runs STPD_URL_OPENER (Disabled unless configured), \
        falls back itself, and the session is the SDK's external-browser flow whatever the mode: it \
        completes on the return URL or the app's next app.foreground, and takes no closed or loadFailed \
        report (the app sees no page). Starting a session that is not notStarted changes nothing.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "session": redirectSessionID,
            "mode": .enumeration(RedirectMode.allCases.map(\.rawValue), "The SDK's start variant (default automatic)"),
            "opener": .enumeration(RedirectOpener.allCases.map(\.rawValue), "Who opens the URL (default app)"),
        ], required: ["session"])
    public static let resultSchema = JSONSchema.ref("RedirectSession")
    public static let errors = [StpdErrors.notFound, StpdErrors.disabled, StpdErrors.redirectOpenFailed]
}

public enum RedirectReport: RPCMethod {
    public struct Params: Codable, Sendable {
        public var session: String
        public var outcome: RedirectReportOutcome
        /// loadFailed (required there): the URL whose load failed, the page the browser had reached.
        public var url: String?
        /// The app's description, carried in the error's `data.message`.
        public var message: String?
        public init(session: String, outcome: RedirectReportOutcome, url: String? = nil, message: String? = nil) {
            self.session = session
            self.outcome = outcome
            self.url = url
            self.message = message
        }
    }
    public typealias Result = RedirectSessionView
    public static let name = "redirect.report"
    public static let summary =
        "Tells stpd what the app's browser or web view did: closed, loadFailed or nativeOpenFailed (the SDK's UI outcomes)."
    public static let description: String? = """
        closed: the customer closed the page the app shows (mode inApp, or automatic on its web page, \
        unless stpd opened it with opener daemon): a Source's session completes with RedirectCancelled \
        (the SDK's code 80); a PaymentIntent's or SetupIntent's completes and is followed up as \
        STPPaymentHandler does, whose outcome is canceled only if the intent still requires action. \
        loadFailed: the first load of that page failed, and url is the page the browser had \
        reached when it failed (required: Stripe's hooks.stripe.com page redirects at once to the bank's): \
        when its host contains stripe.com the session completes with RedirectLoadFailed (code 40), \
        otherwise nothing changes, as in the SDK. nativeOpenFailed: in \
        automatic mode on a native URL, the app could not open it: the session falls back to its web page \
        (openURL changes, event redirect.fallback; it then completes on the return URL only), and WeChat \
        Pay completes with RedirectOpenFailed (STPRedirectContextErrorDomain 0). A session no longer in \
        progress is left as it is (a report racing the return URL changes nothing); a report that does not \
        fit the session's mode is InvalidState.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "session": redirectSessionID,
            "outcome": .cases(of: RedirectReportOutcome.self, "What the app's browser or web view did"),
            "url": .string("loadFailed (required there): the URL whose load failed, where the browser had got to"),
            "message": .string("The app's description, carried in the error's data.message"),
        ], required: ["session", "outcome"])
    public static let resultSchema = JSONSchema.ref("RedirectSession")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public struct RedirectSessionParams: Codable, Sendable {
    public var session: String
    public init(session: String) { self.session = session }
}

public typealias RedirectGet = ObjectGet<RedirectListing>
public typealias RedirectList = ObjectList<RedirectListing>

/// Redirect sessions as `redirect.get` and `redirect.list` show them.
public enum RedirectListing: ListedKind {
    public typealias IDParams = RedirectSessionParams
    public typealias View = RedirectSessionView
    public typealias Status = RedirectStatus
    public static let prefix = "redirect"
    public static let idSchema = redirectSessionID
    public static let component = "RedirectSession"
    public static let plural = "sessions"
    public static let getSummary = "A redirect session's state."
    public static let listSummary = "A page of the caller's redirect sessions (root: everyone's), oldest first."
    public static let statusDescription = "Only sessions with this status"
}

public enum RedirectCancel: RPCMethod {
    public typealias Params = RedirectSessionParams
    public typealias Result = RedirectSessionView
    public static let name = "redirect.cancel"
    public static let summary =
        "Cancels an inProgress session; it never reports completion (other states are left as they are)."
    public static let paramsSchema = JSONSchema.object(["session": redirectSessionID], required: ["session"])
    public static let resultSchema = JSONSchema.ref("RedirectSession")
    public static let errors = [StpdErrors.notFound]
}

/// `handle-url`: StripeAPI.handleURLCallback.
public enum HandleURL: RPCMethod {
    public struct Params: Codable, Sendable {
        public var url: String
        public init(url: String) { self.url = url }
    }
    public struct Result: Codable, Sendable {
        public var handled: Bool
        public var session: String?
        public init(handled: Bool, session: String?) {
            self.handled = handled
            self.session = session
        }
        // `session` is always present, null when nothing matched, as the contract says.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(handled, forKey: .handled)
            try container.encode(session, forKey: .session)
        }
    }
    public static let name = "handle-url"
    public static let summary =
        "Completes the inProgress redirect session whose return URL matches, as StripeAPI.handleURLCallback."
    public static let description: String? = """
        A session's return URL matches when scheme and host are equal ignoring case, the path is equal \
        exactly, and every query item of the return URL is in the URL with an equal value (extra items are \
        fine). When several sessions match, the earliest started wins (the SDK's Swift short-circuit); only \
        sessions of the caller's uid (root: all) are considered. handled false when none matched.
        """
    public static let paramsSchema = JSONSchema.object(
        ["url": .string("The URL the desktop handed over")], required: ["url"])
    public static let resultSchema = JSONSchema.object(
        ["handled": .boolean("A session matched and completed"), "session": .nullable(redirectSessionID)],
        required: ["handled", "session"])
}

import JSONRPC
import StpdValues

// VoucherHandling and RedirectReportOutcome are shared values (StpdValues/Redirects.swift): the
// domain takes them as they are.
extension VoucherHandling {
    public static let schema = JSONSchema.enumeration(
        allCases.map(\.rawValue),
        "A voucher: open (default, as the SDK: a redirect session on hosted_voucher_url, succeeded once closed) or display (the app shows nextAction.details: succeeded at once)"
    )
}

/// How to start a session right after it is opened (paymentIntent.confirm).
public struct RedirectStartOptions: Codable, Sendable, Hashable {
    public var mode: RedirectMode?
    public var opener: RedirectOpener?
    public init(mode: RedirectMode? = nil, opener: RedirectOpener? = nil) {
        self.mode = mode
        self.opener = opener
    }
}

/// A redirect session (the SDK's STPRedirectContext), durable and owned by its creator's uid.
public struct RedirectSessionView: Codable, Sendable, Hashable {
    public struct Completion: Codable, Sendable, Hashable {
        /// `url` (a matching return URL arrived), `foreground` (app.foreground), `closed` and
        /// `loadFailed` (redirect.report), `error` (the native app could not be opened).
        public var trigger: String
        public var url: String?
        public var error: JSONValue?
        public var at: String
        public init(trigger: String, url: String?, error: JSONValue?, at: String) {
            self.trigger = trigger
            self.url = url
            self.error = error
            self.at = at
        }
    }

    /// What the follow-up after completion found: the source polled, or the intent retrieved.
    public struct Outcome: Codable, Sendable, Hashable {
        /// The source's status (`chargeable`, `consumed`, `failed`, `canceled`, still `pending`), the
        /// PaymentIntent's or SetupIntent's status (`succeeded`, `processing`, `requires_payment_method`, ...), or
        /// `error` (also when the session completed with an error: no follow-up then).
        public var result: String
        /// For a PaymentIntent or SetupIntent: STPPaymentHandler's verdict by its status rules (its
        /// poll's `finished` says the same), with `error` when it failed.
        public var intentResult: IntentResult?
        public var error: JSONValue?
        /// The Stripe object as fetched (client secret removed).
        public var object: JSONValue?
        public var at: String
        public init(
            result: String, intentResult: IntentResult? = nil, error: JSONValue?, object: JSONValue?, at: String
        ) {
            self.result = result
            self.intentResult = intentResult
            self.error = error
            self.object = object
            self.at = at
        }
    }

    public var id: String
    public var object = "redirect_session"
    public var status: RedirectStatus
    /// `source`, `paymentIntent` or `setupIntent`.
    public var kind: String
    public var sourceId: String?
    public var paymentIntentId: String?
    public var setupIntentId: String?
    public var nativeURL: String?
    public var redirectURL: String?
    public var returnURL: String?
    public var mode: RedirectMode?
    public var opener: RedirectOpener?
    /// The URL to open, once started.
    public var openURL: String?
    /// Seconds the follow-up poll of a Source runs after completion.
    public var followUpTimeout: Double
    public var completion: Completion?
    public var outcome: Outcome?
    public var createdAt: String
    public var updatedAt: String

    public init(
        id: String, status: RedirectStatus, kind: String, sourceId: String?, paymentIntentId: String?,
        setupIntentId: String? = nil, nativeURL: String?,
        redirectURL: String?, returnURL: String?, mode: RedirectMode?, opener: RedirectOpener?, openURL: String?,
        followUpTimeout: Double, completion: Completion?, outcome: Outcome?, createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.status = status
        self.kind = kind
        self.sourceId = sourceId
        self.paymentIntentId = paymentIntentId
        self.setupIntentId = setupIntentId
        self.nativeURL = nativeURL
        self.redirectURL = redirectURL
        self.returnURL = returnURL
        self.mode = mode
        self.opener = opener
        self.openURL = openURL
        self.followUpTimeout = followUpTimeout
        self.completion = completion
        self.outcome = outcome
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let schema = JSONSchema.object(
        [
            "id": redirectSessionID,
            "object": JSONSchema(["const": "redirect_session"]),
            "status": .cases(of: RedirectStatus.self, "The SDK's redirect context states"),
            "kind": .enumeration(["source", "paymentIntent", "setupIntent"], "What is being redirected"),
            "sourceId": .nullable(.string("The Source")),
            "paymentIntentId": .nullable(.string("The PaymentIntent")),
            "setupIntentId": .nullable(.string("The SetupIntent")),
            "nativeURL": .nullable(.string("An app URL (Alipay native_url, WeChat Pay ios_native_url)")),
            "redirectURL": .nullable(.string("The page where the customer authorizes")),
            "returnURL": .nullable(.string("The URL that completes the session (see handle-url)")),
            "mode": .nullable(.enumeration(RedirectMode.allCases.map(\.rawValue), "How it was started")),
            "opener": .nullable(.enumeration(RedirectOpener.allCases.map(\.rawValue), "Who opens openURL")),
            "openURL": .nullable(.string("The URL to open, once started")),
            "followUpTimeout": .number("Seconds the follow-up poll of a Source runs after completion", minimum: 0),
            "completion": .nullable(
                .object(
                    [
                        "trigger": .enumeration(
                            ["url", "foreground", "closed", "loadFailed", "error"], "What completed it"),
                        "url": .nullable(.string("The return URL that arrived")),
                        "error": .nullable(.ref("ErrorObject")),
                        "at": .string("RFC 3339", format: "date-time"),
                    ], required: ["trigger", "at"])),
            "outcome": .nullable(
                .object(
                    [
                        "result": .string("Source status, PaymentIntent or SetupIntent status, or error"),
                        "intentResult": .nullable(
                            .enumeration(
                                IntentResult.allCases.filter { $0 != .pending }.map(\.rawValue),
                                "An intent's verdict by STPPaymentHandler's status rules (error says why it failed)")),
                        "error": .nullable(.ref("ErrorObject")),
                        "object": .nullable(
                            JSONSchema(["type": "object", "description": "The Stripe object fetched"])),
                        "at": .string("RFC 3339", format: "date-time"),
                    ], required: ["result", "at"])),
            "createdAt": .string("RFC 3339", format: "date-time"),
            "updatedAt": .string("RFC 3339", format: "date-time"),
        ], required: ["id", "object", "status", "kind", "followUpTimeout", "createdAt", "updatedAt"])
}

let redirectSessionID = JSONSchema.string("The redirect session id", pattern: "^rdr_[A-Za-z0-9]+$")

import JSONRPC

let sourceID = JSONSchema.string("A Stripe Source id", pattern: "^src_[A-Za-z0-9]+$")
let clientSecretSchema = JSONSchema.string("The object's client secret (never shown back)")
let stripeCallErrors: [ErrorDeclaration] = [
    StpdErrors.stripeCardError, StpdErrors.stripeInvalidRequest, StpdErrors.stripeAPIError,
    StpdErrors.stripeAuthentication,
    StpdErrors.stripeRateLimited, StpdErrors.stripeConnection, StpdErrors.stripeNotConfigured,
]

/// `source.create` and `source.retrieve` answer with the record and, to the caller only, the
/// client secret it needs to hand on. Events and `source.get` leave it out, except where Stripe
/// builds it into the redirect URL the customer must open.
public struct SourceResult: Codable, Sendable {
    public var source: SourceView
    public var clientSecret: String?
    public init(source: SourceView, clientSecret: String?) {
        self.source = source
        self.clientSecret = clientSecret
    }

    static let schema = JSONSchema.object(
        ["source": .ref("Source"), "clientSecret": .nullable(.string("The Source's client secret"))],
        required: ["source"])
}

/// `source.*`: Sources (STPSourceParams / createSource / retrieveSource) and their polls.
public enum SourceCreate: RPCMethod {
    public struct Params: Codable, Sendable {
        public var params: SourceConstructor
        /// Appended to the return URL as `redirect_merchant_name` (default: STPD_MERCHANT_NAME, else
        /// the calling app's name, as the SDK names the app).
        public var merchantName: String?
        public init(params: SourceConstructor, merchantName: String? = nil) {
            self.params = params
            self.merchantName = merchantName
        }
    }
    public typealias Result = SourceResult
    public static let name = "source.create"
    public static let summary = "Creates a Source from one of the SDK's typed constructors (or raw Stripe params)."
    public static let description: String? = """
        `params` holds exactly one constructor (card, sofort, ideal, ...). When the return URL has no \
        redirect_merchant_name, one is appended, as the SDK appends the app's name: merchantName, else \
        STPD_MERCHANT_NAME, else the calling app's name (the socket peer's program, or the script an \
        interpreter runs, from /proc/<pid>/cmdline). The Source is remembered \
        (source.get, source.list) and announced as source.created.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "params": SourceConstructor.schema,
            "merchantName": .string("redirect_merchant_name to append to the return URL"),
        ],
        required: ["params"])
    public static let resultSchema = SourceResult.schema
    public static let errors = [StpdErrors.cardInvalid] + stripeCallErrors
}

public enum SourceRetrieve: RPCMethod {
    public struct Params: Codable, Sendable {
        public var id: String
        public var clientSecret: String
        public init(id: String, clientSecret: String) {
            self.id = id
            self.clientSecret = clientSecret
        }
    }
    public typealias Result = SourceResult
    public static let name = "source.retrieve"
    public static let summary =
        "Fetches a Source with its client secret and remembers it (source.updated when it changed)."
    public static let paramsSchema = JSONSchema.object(
        ["id": sourceID, "clientSecret": clientSecretSchema], required: ["id", "clientSecret"])
    public static let resultSchema = SourceResult.schema
    public static let errors = [StpdErrors.permissionDenied] + stripeCallErrors
}

public struct SourceIDParams: Codable, Sendable {
    public var id: String
    public init(id: String) { self.id = id }
}

public typealias SourceGet = ObjectGet<SourceListing>
public typealias SourceList = ObjectList<SourceListing>

/// Sources as `source.get` and `source.list` show them.
public enum SourceListing: ListedKind {
    public typealias IDParams = SourceIDParams
    public typealias View = SourceView
    public typealias Status = SourceStatus
    public static let prefix = "source"
    public static let idSchema = sourceID
    public static let component = "Source"
    public static let plural = "sources"
    public static let getSummary = "A remembered Source as last fetched, with its poll."
    public static let listSummary = "A page of the caller's remembered Sources (root: everyone's), oldest first."
    public static let statusDescription = "Only Sources Stripe last gave this status"
}

public enum SourcePoll: RPCMethod {
    public struct Params: Codable, Sendable {
        public var id: String
        /// Needed unless the Source was created or retrieved through stpd.
        public var clientSecret: String?
        /// Seconds; capped at 300 (the SDK's maximum), which is also the default.
        public var timeout: Double?
        public init(id: String, clientSecret: String? = nil, timeout: Double? = nil) {
            self.id = id
            self.clientSecret = clientSecret
            self.timeout = timeout
        }
    }
    public typealias Result = SourceView
    public static let name = "source.poll"
    public static let summary =
        "Starts polling a Source with the SDK's schedule; a poll already running for it is replaced silently."
    public static let description: String? = """
        The first request goes out at once, then every 1.5 s while the status is pending; a non-4xx error \
        doubles the interval up to 24 s, a connection error retries at the same interval, 5 consecutive \
        failures or a 4xx end it with that error; any status but pending ends it. The poll ends at \
        min(timeout, 300 s) with the last source seen. It is durable: after a restart it resumes with its \
        original deadline. Events: source.pollStarted, source.polled (status or error changed), \
        source.pollFinished (once), source.pollPaused/pollResumed (app.background/app.foreground).
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "id": sourceID, "clientSecret": clientSecretSchema,
            "timeout": .number("Seconds (default and maximum 300)", minimum: 0),
        ], required: ["id"])
    public static let resultSchema = JSONSchema.ref("Source")
    public static let errors = [StpdErrors.notFound, StpdErrors.tooManyPolls]
}

public enum SourceStopPolling: RPCMethod {
    public typealias Params = SourceIDParams
    public typealias Result = SourceView
    public static let name = "source.stopPolling"
    public static let summary = "Stops a Source's poll; it never reports (source.pollStopped)."
    public static let paramsSchema = JSONSchema.object(["id": sourceID], required: ["id"])
    public static let resultSchema = JSONSchema.ref("Source")
    public static let errors = [StpdErrors.notFound]
}

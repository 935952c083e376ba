import JSONRPC

/// A Source stpd knows about (created or retrieved through it), as clients see it: the fields the
/// SDK decodes, its latest poll, and the Stripe object itself (without its client secret).
public struct SourceView: Codable, Sendable, Hashable {
    public struct Redirect: Codable, Sendable, Hashable {
        public var status: String
        public var url: String
        public var returnURL: String
        public init(status: String, url: String, returnURL: String) {
            self.status = status
            self.url = url
            self.returnURL = returnURL
        }
    }

    public var id: String
    public var object = "source_record"
    /// As the SDK decodes them (case-insensitive; unmapped values read `unknown`).
    public var type: String
    public var flow: String
    public var status: String
    public var usage: String
    public var isReusable: Bool
    /// Nil unless Stripe sent a complete one (return_url, status and url).
    public var redirect: Redirect?
    public var amount: Int?
    public var currency: String?
    public var poll: PollView?
    /// The Stripe Source as last fetched, nulls dropped, `client_secret` removed.
    public var source: JSONValue
    public var createdAt: String
    public var updatedAt: String

    public init(
        id: String, type: String, flow: String, status: String, usage: String, isReusable: Bool, redirect: Redirect?,
        amount: Int?, currency: String?, poll: PollView?, source: JSONValue, createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.type = type
        self.flow = flow
        self.status = status
        self.usage = usage
        self.isReusable = isReusable
        self.redirect = redirect
        self.amount = amount
        self.currency = currency
        self.poll = poll
        self.source = source
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let schema = JSONSchema.object(
        [
            "id": .string("The Stripe Source id", pattern: "^src_[A-Za-z0-9]+$"),
            "object": JSONSchema(["const": "source_record"]),
            "type": .enumeration(
                [
                    "bancontact", "card", "giropay", "ideal", "sepa_debit", "sofort", "three_d_secure", "alipay", "p24",
                    "eps",
                    "multibanco", "wechat", "klarna", "unknown",
                ], "The source type as the SDK decodes it"),
            "flow": .enumeration(
                ["none", "redirect", "code_verification", "receiver", "unknown"], "What the customer must do"),
            "status": .enumeration(
                ["pending", "chargeable", "consumed", "canceled", "failed", "unknown"], "The source's status"),
            "usage": .enumeration(["reusable", "single_use", "unknown"], "The source's usage"),
            "isReusable": .boolean("The SDK's isReusable: anything but single_use"),
            "redirect": .nullable(
                .object(
                    [
                        "status": .enumeration(
                            ["pending", "succeeded", "failed", "not_required", "unknown"], "Redirect status"),
                        "url": .string("Where the customer authorizes", format: "uri"),
                        "returnURL": .string("Where the customer comes back to", format: "uri"),
                    ], required: ["status", "url", "returnURL"])),
            "amount": .nullable(.integer("Minor units")),
            "currency": .nullable(.string("ISO currency, lower case")),
            "poll": .nullable(.ref("SourcePoll")),
            "source": JSONSchema(["type": "object", "description": "The Stripe Source (client_secret removed)"]),
            "createdAt": .string("RFC 3339", format: "date-time"),
            "updatedAt": .string("RFC 3339", format: "date-time"),
        ],
        required: ["id", "object", "type", "flow", "status", "usage", "isReusable", "source", "createdAt", "updatedAt"])
}

/// A Source poll (the SDK's STPSourcePoller), durable: it keeps its deadline across restarts.
public struct PollView: Codable, Sendable, Hashable {
    public var status: PollStatus
    public var startedAt: String
    /// startedAt + min(timeout, 300 s); polling may overrun it by one interval, as in the SDK.
    public var deadline: String
    public var timeout: Double
    public var retryCount: Int
    /// The source status the poll ended on (finished), or last saw.
    public var sourceStatus: String?
    /// Why it ended with an error: `{code, message, data}` as an RPC error of the contract.
    public var error: JSONValue?
    /// The redirect session this poll follows up, if any.
    public var redirect: String?

    public init(
        status: PollStatus, startedAt: String, deadline: String, timeout: Double, retryCount: Int,
        sourceStatus: String?,
        error: JSONValue?, redirect: String?
    ) {
        self.status = status
        self.startedAt = startedAt
        self.deadline = deadline
        self.timeout = timeout
        self.retryCount = retryCount
        self.sourceStatus = sourceStatus
        self.error = error
        self.redirect = redirect
    }

    static let schema = JSONSchema.object(
        [
            "status": .cases(of: PollStatus.self, "finished reports once; stopped never reports"),
            "startedAt": .string("RFC 3339", format: "date-time"),
            "deadline": .string("startedAt + timeout (RFC 3339)", format: "date-time"),
            "timeout": .number("Seconds: min(requested, 300)", minimum: 0),
            "retryCount": .integer("Consecutive failed requests (5 end the poll)", minimum: 0),
            "sourceStatus": .nullable(.string("The source status last seen (finished: the result)")),
            "error": .nullable(.ref("ErrorObject")),
            "redirect": .nullable(.string("The redirect session this poll follows up")),
        ], required: ["status", "startedAt", "deadline", "timeout", "retryCount"])
}

/// An RPC error as carried inside an object's state (a poll's or redirect's end).
let errorObjectSchema = JSONSchema.object(
    [
        "code": .integer("A code of the contract (3xxx for Stripe errors, 4xxx redirects)"),
        "message": .string("What went wrong"),
        "data": JSONSchema(["description": "As the error's declaration says"]),
    ], required: ["code", "message"])

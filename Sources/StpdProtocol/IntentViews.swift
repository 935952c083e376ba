import JSONRPC
import StpdValues
import StripeAPI

// IntentNaming and its two kinds are shared values (StpdValues/EventNames.swift): the domain
// and the event names use them too.
extension IntentNaming {
    static var idSchema: JSONSchema {
        .string("The \(noun) id", pattern: "^\(idPrefix)[A-Za-z0-9]+$")
    }
    /// The SDK takes a scoped secret for a PaymentIntent only (`STPPaymentIntentParams`'s
    /// `^pi_[^_]+_(scoped_)?secret_[^_]+$`; `STPSetupIntentConfirmParams`'s has no scoped form).
    static var secretSchema: JSONSchema {
        idPrefix == "pi_"
            ? .string(
                "The \(noun)'s client secret (never shown back); a scoped one (`pi_…_scoped_secret_…`) too",
                pattern: "^pi_[A-Za-z0-9]+_(scoped_)?secret_[A-Za-z0-9]+$")
            : .string(
                "The \(noun)'s client secret (never shown back)",
                pattern: "^\(idPrefix)[A-Za-z0-9]+_secret_[A-Za-z0-9]+$")
    }
    static var objectSchema: JSONSchema {
        JSONSchema(["type": "object", "description": .string("The Stripe \(noun) (client_secret removed)")])
    }
}

/// An intent's `next_action` as stpd carries it.
public struct NextActionView: Codable, Sendable, Hashable {
    /// Stripe's `next_action.type`.
    public var type: String
    /// What the app does with it (`NextAction.Kind`): `redirect`, `display`, `awaitCustomer`,
    /// `stripeSDK` or `unsupported`.
    public var kind: String
    /// Stripe's hash for the type (`next_action[<type>]`), as sent.
    public var details: JSONValue?
    /// The redirect session stpd opened for it.
    public var session: String?

    public init(type: String, kind: String, details: JSONValue?, session: String?) {
        self.type = type
        self.kind = kind
        self.details = details
        self.session = session
    }

    static let schema = JSONSchema.object(
        [
            "type": .string("Stripe's next_action.type (redirect_to_url, oxxo_display_details, blik_authorize, ...)"),
            "kind": .enumeration(
                NextAction.Kind.allCases.map(\.rawValue),
                "What the app does: open a redirect (redirect), show the details (display), show them while stpd polls (awaitCustomer); stripeSDK and unsupported come with an error"
            ),
            "details": .nullable(JSONSchema(["type": "object", "description": "Stripe's hash for the type, as sent"])),
            "session": .nullable(redirectSessionID),
        ], required: ["type", "kind"])
}

/// A poll of an intent: started by a confirmation whose next action awaits the customer
/// elsewhere, or by a redirect session's completion.
public struct IntentPollView: Codable, Sendable, Hashable {
    public var id: String
    public var status: IntentPollStatus
    public var purpose: IntentPollPurpose
    /// The next action it awaits (its type).
    public var nextActionType: String?
    /// The redirect session it follows up.
    public var redirect: String?
    public var startedAt: String
    /// When an awaitCustomer poll gives up (a followUp's budget depends on what it reads).
    public var deadline: String?
    /// Set once it finished: STPPaymentHandler's verdict, with the error of a failure.
    public var result: IntentResult?
    public var error: JSONValue?

    public init(
        id: String, status: IntentPollStatus, purpose: IntentPollPurpose, nextActionType: String?, redirect: String?,
        startedAt: String, deadline: String?, result: IntentResult?, error: JSONValue?
    ) {
        self.id = id
        self.status = status
        self.purpose = purpose
        self.nextActionType = nextActionType
        self.redirect = redirect
        self.startedAt = startedAt
        self.deadline = deadline
        self.result = result
        self.error = error
    }

    static let schema = JSONSchema.object(
        [
            "id": .string("The poll's id", pattern: "^ipoll_[A-Za-z0-9]+$"),
            "status": .cases(of: IntentPollStatus.self, "polling, then finished (reported once) or stopped (never)"),
            "purpose": .cases(
                of: IntentPollPurpose.self,
                "awaitCustomer: until the customer pays elsewhere; followUp: re-reading after a redirect"),
            "nextActionType": .nullable(.string("The next action it awaits")),
            "redirect": .nullable(redirectSessionID),
            "startedAt": .string("RFC 3339", format: "date-time"),
            "deadline": .nullable(.string("RFC 3339: an awaitCustomer poll ends here", format: "date-time")),
            "result": .nullable(
                .enumeration(
                    IntentResult.allCases.filter { $0 != .pending }.map(\.rawValue),
                    "Once finished: STPPaymentHandler's verdict (see docs/next-actions.md)")),
            "error": .nullable(.ref("ErrorObject")),
        ], required: ["id", "status", "purpose", "startedAt"])
}

/// An intent stpd polls or polled, as clients see it: its status and next action as last read,
/// its poll, and the Stripe object itself (without its client secret).
public struct IntentView: Codable, Sendable, Hashable {
    public var id: String
    /// `payment_intent_record` or `setup_intent_record`.
    public var object: String
    /// Stripe's status as last read.
    public var status: String
    public var nextAction: NextActionView?
    public var poll: IntentPollView?
    /// The Stripe object as last read, nulls dropped, `client_secret` removed.
    public var intent: JSONValue
    public var createdAt: String
    public var updatedAt: String

    public init(
        id: String, object: String, status: String, nextAction: NextActionView?, poll: IntentPollView?,
        intent: JSONValue, createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.object = object
        self.status = status
        self.nextAction = nextAction
        self.poll = poll
        self.intent = intent
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let schema = JSONSchema.object(
        [
            "id": .string("The Stripe intent id", pattern: "^(pi|seti)_[A-Za-z0-9]+$"),
            "object": .enumeration(["payment_intent_record", "setup_intent_record"], "Which kind of intent"),
            "status": .string("Stripe's status as last read"),
            "nextAction": .nullable(.ref("NextAction")),
            "poll": .nullable(.ref("IntentPoll")),
            "intent": JSONSchema(["type": "object", "description": "The Stripe object (client_secret removed)"]),
            "createdAt": .string("RFC 3339", format: "date-time"),
            "updatedAt": .string("RFC 3339", format: "date-time"),
        ], required: ["id", "object", "status", "intent", "createdAt", "updatedAt"])
}

/// A coding key made at run time: the member an intent's Stripe object is under, a page's items
/// (named per kind), a payment method's type.
struct MemberKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// What confirming an intent, handling its next action or verifying its microdeposits answers:
/// the intent under `paymentIntent` or `setupIntent`, STPPaymentHandler's result, and what stpd
/// did about the next action.
public struct IntentAnswer<K: IntentNaming>: Codable, Sendable, ContractComponent {
    /// `PaymentIntentAnswer`, shared by confirm, handleNextAction and verifyMicrodeposits.
    static var componentName: String? { "\(K.noun)Answer" }

    public var intent: JSONValue
    public var result: IntentResult
    /// Why it failed (result failed).
    public var error: JSONValue?
    public var nextAction: NextActionView?
    /// The redirect session opened for a redirect kind.
    public var redirect: RedirectSessionView?
    /// The poll started for a kind that awaits the customer.
    public var poll: IntentPollView?

    public init(
        intent: JSONValue, result: IntentResult, error: JSONValue? = nil, nextAction: NextActionView? = nil,
        redirect: RedirectSessionView? = nil, poll: IntentPollView? = nil
    ) {
        self.intent = intent
        self.result = result
        self.error = error
        self.nextAction = nextAction
        self.redirect = redirect
        self.poll = poll
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: MemberKey.self)
        intent = try c.decode(JSONValue.self, forKey: MemberKey(K.prefix))
        result = try c.decode(IntentResult.self, forKey: MemberKey("result"))
        error = try c.decodeIfPresent(JSONValue.self, forKey: MemberKey("error"))
        nextAction = try c.decodeIfPresent(NextActionView.self, forKey: MemberKey("nextAction"))
        redirect = try c.decodeIfPresent(RedirectSessionView.self, forKey: MemberKey("redirect"))
        poll = try c.decodeIfPresent(IntentPollView.self, forKey: MemberKey("poll"))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: MemberKey.self)
        try c.encode(intent, forKey: MemberKey(K.prefix))
        try c.encode(result, forKey: MemberKey("result"))
        try c.encodeIfPresent(error, forKey: MemberKey("error"))
        try c.encode(nextAction, forKey: MemberKey("nextAction"))
        try c.encodeIfPresent(redirect, forKey: MemberKey("redirect"))
        try c.encodeIfPresent(poll, forKey: MemberKey("poll"))
    }

    static var schema: JSONSchema {
        .object(
            [
                K.prefix: K.objectSchema,
                "result": .cases(
                    of: IntentResult.self,
                    "STPPaymentHandler's result: succeeded, canceled, failed (error says why), or pending while a redirect session or a poll carries the action on"
                ),
                "error": .nullable(.ref("ErrorObject")),
                "nextAction": .nullable(.ref("NextAction")),
                "redirect": .nullable(.ref("RedirectSession")),
                "poll": .nullable(.ref("IntentPoll")),
            ], required: [K.prefix, "result", "nextAction"])
    }
}

/// `retrieve`: the intent and its next action, as read (nothing is opened or polled).
public struct IntentRetrieved<K: IntentNaming>: Codable, Sendable, ContractComponent {
    static var componentName: String? { nil }

    public var intent: JSONValue
    public var nextAction: NextActionView?

    public init(intent: JSONValue, nextAction: NextActionView?) {
        self.intent = intent
        self.nextAction = nextAction
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: MemberKey.self)
        intent = try c.decode(JSONValue.self, forKey: MemberKey(K.prefix))
        nextAction = try c.decodeIfPresent(NextActionView.self, forKey: MemberKey("nextAction"))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: MemberKey.self)
        try c.encode(intent, forKey: MemberKey(K.prefix))
        try c.encode(nextAction, forKey: MemberKey("nextAction"))
    }

    static var schema: JSONSchema {
        .object(
            [K.prefix: K.objectSchema, "nextAction": .nullable(.ref("NextAction"))], required: [K.prefix, "nextAction"])
    }
}

import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// What stpd stores of an intent it polls: the object as last read (without its client secret,
/// kept apart so it never reaches an event), and its poll. Its id is Stripe's (`pi_…`, `seti_…`).
struct IntentRecord<Intent: StripeIntent>: ViewedInDomain {
    struct Poll: Codable, Sendable {
        /// Tells this poll's results from those of one it replaced.
        var id: String
        var status: IntentPollStatus
        var purpose: IntentPollPurpose
        /// The entry point of the action it ends (`IntentRules.outcomeTable`); nil in a poll stored
        /// before stpd kept it: read as handleNextAction's.
        var entry: IntentEntry?
        /// The intent's payment method type when the poll began (its reads refresh Cash App and
        /// Klarna: `IntentRules.refreshes`); nil when unknown.
        var paymentMethodType: String?
        /// Requested before each read (Alipay's return URL: `NextAction.alipayReturnPing`).
        var pingURL: String?
        var nextActionType: String?
        var redirect: String?
        var startedAt: Date
        var deadline: Date?
        var result: IntentResult?
        var error: Failure?
    }

    var id: String
    var owner: UInt32
    var clientSecret: String
    var intent: JSONValue
    var poll: Poll?
    var createdAt: Date
    var updatedAt: Date

    typealias Event = IntentEvent<Intent.Naming>

    var decoded: Intent? { try? Intent(json: intent) }

    func view(_ failures: any FailureRenderer) -> IntentView {
        let model = decoded
        return IntentView(
            id: id, object: Intent.kind == .paymentIntent ? "payment_intent_record" : "setup_intent_record",
            status: intent["status"]?.stringValue ?? "unknown",
            nextAction: model?.nextAction.map { NextActionView($0) },
            poll: poll.map { poll in
                IntentPollView(
                    id: poll.id, status: poll.status, purpose: poll.purpose, nextActionType: poll.nextActionType,
                    redirect: poll.redirect, startedAt: poll.startedAt.formatted(.iso8601),
                    deadline: poll.deadline?.formatted(.iso8601), result: poll.result,
                    error: poll.error.map(failures.render))
            }, intent: intent, createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
    }

    static var kind: ObjectKind { Intent.kind == .paymentIntent ? .paymentIntent : .setupIntent }
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static var schemaVersion: Int { 1 }
    static var removed: Event? { .removed }

    var queryStatus: String? { poll?.status.rawValue }
    /// A running poll needs this process.
    var isLive: Bool { poll?.status == .polling }
    /// No poll runs for it.
    var isFinished: Bool { poll.map { $0.status != .polling } ?? true }
}

extension NextActionView {
    public init(_ action: NextAction, session: String? = nil) {
        self.init(type: action.rawType, kind: action.kind.rawValue, details: action.details, session: session)
    }
}

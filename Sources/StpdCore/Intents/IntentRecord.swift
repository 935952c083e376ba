import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// What stpd stores of an intent it polls: the object as last read (without its client secret,
/// kept apart so it never reaches an event), and its poll. Its id is Stripe's (`pi_…`, `seti_…`).
/// Public for the edge, which shows it as the contract's `IntentView`.
public struct IntentRecord<Intent: StripeIntent>: DurableRecord {
    public struct Poll: Codable, Sendable {
        /// Tells this poll's results from those of one it replaced.
        public internal(set) var id: String
        public internal(set) var status: IntentPollStatus
        public internal(set) var purpose: IntentPollPurpose
        /// The entry point of the action it ends (`IntentRules.outcomeTable`); nil in a poll stored
        /// before stpd kept it: read as handleNextAction's.
        var entry: IntentEntry?
        /// The intent's payment method type when the poll began (its reads refresh Cash App and
        /// Klarna: `IntentRules.refreshes`); nil when unknown.
        var paymentMethodType: String?
        /// Requested before each read (Alipay's return URL: `NextAction.alipayReturnPing`).
        var pingURL: String?
        public internal(set) var nextActionType: String?
        public internal(set) var redirect: String?
        public internal(set) var startedAt: Date
        public internal(set) var deadline: Date?
        public internal(set) var result: IntentResult?
        public internal(set) var error: Failure?
    }

    public internal(set) var id: String
    public internal(set) var owner: UInt32
    var clientSecret: String
    public internal(set) var intent: JSONValue
    public internal(set) var poll: Poll?
    public internal(set) var createdAt: Date
    public var updatedAt: Date

    public typealias Event = IntentEvent<Intent.Naming>

    /// The intent as Stripe's model reads it. The record keeps the object without its client
    /// secret, which the model requires: it is put back for the decoding (and stays here).
    public var decoded: Intent? {
        guard var fields = intent.objectValue else { return nil }
        fields["client_secret"] = .string(clientSecret)
        return try? Intent(json: .object(fields))
    }

    public func shown(_ views: any RecordViews) throws -> PublicState { try views.intent(self) }
    public func publicState(_ views: any RecordViews) throws -> JSONValue { try shown(views).json }

    public static var kind: ObjectKind { Intent.kind == .paymentIntent ? .paymentIntent : .setupIntent }
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    public static var schemaVersion: Int { 1 }
    public static var removed: Event? { .removed }

    public var queryStatus: String? { poll?.status.rawValue }
    /// A running poll needs this process.
    public var isLive: Bool { poll?.status == .polling }
    /// No poll runs for it.
    public var isFinished: Bool { poll.map { $0.status != .polling } ?? true }
}

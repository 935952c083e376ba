import Foundation
import JSONRPC
import StpdValues

/// What is stored of a customer session: the view's fields plus the adapter with its credentials.
/// Public for the edge, which shows it as the contract's `CustomerSessionView`.
public struct CustomerSessionRecord: DurableRecord {
    public static let kind = ObjectKind.customerSession
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    public static let schemaVersion = 1
    public static let removed: CustomerEvent? = .removed

    public internal(set) var id: String
    public internal(set) var owner: UInt32
    public internal(set) var status = CustomerSessionStatus.open
    /// With its credentials: the edge shows it `redacted`.
    public internal(set) var adapter: SessionAdapter
    public internal(set) var customerId: String?
    public internal(set) var lastSelectedPaymentMethod: String?
    public internal(set) var customerFetchedAt: Date?
    public internal(set) var paymentMethodsFetchedAt: Date?
    /// The last operation that failed and why (`operation`, `message`), until one succeeds.
    public internal(set) var lastError: JSONValue?
    public internal(set) var createdAt: Date
    public var updatedAt: Date

    init(id: String, owner: UInt32, adapter: SessionAdapter, createdAt: Date) {
        self.id = id
        self.owner = owner
        self.adapter = adapter
        self.createdAt = createdAt
        self.updatedAt = createdAt
    }

    public var queryStatus: String? { status.rawValue }
    public var isFinished: Bool { status == .closed }
    public var isTerminal: Bool { status == .closed }

    public func shown(_ views: any RecordViews) throws -> PublicState { try views.customerSession(self) }
    public func publicState(_ views: any RecordViews) throws -> JSONValue { try shown(views).json }
}

/// The last PaymentMethod a uid selected for a Stripe customer, shared by that uid's sessions
/// (the SDK keeps it per customer). Its new state never depends on the old: written with `put`.
struct CustomerPreference: ViewedInDomain {
    static let kind = ObjectKind.customerPreference
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static let schemaVersion = 1
    static let removed: CustomerPreferenceEvent? = nil

    var id: String
    var owner: UInt32
    var customerId: String
    var paymentMethod: String?
    var createdAt: Date
    var updatedAt: Date

    static func id(_ customer: String, _ owner: UInt32) -> String { "cpref_\(owner)_\(customer)" }

    func view(_: any FailureRenderer) -> View { View(customerId: customerId, paymentMethod: paymentMethod) }

    struct View: Codable, Sendable {
        var customerId: String
        /// Encoded even when nil: the event says the preference was cleared.
        var paymentMethod: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(customerId, forKey: .customerId)
            try container.encode(paymentMethod, forKey: .paymentMethod)
        }
    }
}

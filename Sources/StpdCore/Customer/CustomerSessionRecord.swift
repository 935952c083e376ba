import Foundation
import JSONRPC
import StpdProtocol

/// What is stored of a customer session: the view's fields plus the adapter with its credentials.
struct CustomerSessionRecord: ViewedInDomain {
    static let kind = ObjectKind.customerSession
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static let schemaVersion = 1
    static let removed: CustomerEvent? = .removed

    var id: String
    var owner: UInt32
    var status = CustomerSessionStatus.open
    var adapter: SessionAdapter
    var customerId: String?
    var lastSelectedPaymentMethod: String?
    var customerFetchedAt: Date?
    var paymentMethodsFetchedAt: Date?
    var lastError: JSONValue?
    var createdAt: Date
    var updatedAt: Date

    init(id: String, owner: UInt32, adapter: SessionAdapter, createdAt: Date) {
        self.id = id
        self.owner = owner
        self.adapter = adapter
        self.createdAt = createdAt
        self.updatedAt = createdAt
    }

    var queryStatus: String? { status.rawValue }
    var isFinished: Bool { status == .closed }
    var isTerminal: Bool { status == .closed }

    func view(_: any FailureRenderer) -> CustomerSessionView {
        CustomerSessionView(
            id: id, status: status, adapter: CustomerAdapter(adapter.redacted), customerId: customerId,
            lastSelectedPaymentMethod: lastSelectedPaymentMethod,
            customerFetchedAt: customerFetchedAt?.formatted(.iso8601),
            paymentMethodsFetchedAt: paymentMethodsFetchedAt?.formatted(.iso8601), lastError: lastError,
            createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
    }
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

extension CustomerAdapter {
    /// The session's adapter as the contract shows it (what is left in StpdCore of the view
    /// building that moves to StpdDaemon: docs/architecture.md).
    init(_ adapter: SessionAdapter) {
        let kind: Kind =
            switch adapter.kind {
            case .stripe: .stripe
            case .backend: .backend
            case .app: .app
            }
        self.init(
            kind: kind, keyProvider: adapter.keyProvider.map(KeyProvider.init), url: adapter.url,
            authorization: adapter.authorization, includeApplePayPaymentMethods: adapter.includeApplePayPaymentMethods,
            timeout: adapter.timeout)
    }
}

extension CustomerAdapter.KeyProvider {
    init(_ provider: SessionAdapter.KeyProvider) {
        let kind: Kind =
            switch provider.kind {
            case .backend: .backend
            case .app: .app
            case .server: .server
            }
        self.init(kind: kind, url: provider.url, authorization: provider.authorization, customer: provider.customer)
    }
}

import Foundation
import StpdCore
import StpdProtocol

// A customer session as the contract shows it, in replies and in the events `WireViews` gives the
// log; and `customer.open`'s adapter as the session stores it.

extension CustomerSessionView {
    init(_ record: CustomerSessionRecord) {
        self.init(
            id: record.id, status: record.status, adapter: CustomerAdapter(record.adapter.redacted),
            customerId: record.customerId, lastSelectedPaymentMethod: record.lastSelectedPaymentMethod,
            customerFetchedAt: record.customerFetchedAt?.formatted(.iso8601),
            paymentMethodsFetchedAt: record.paymentMethodsFetchedAt?.formatted(.iso8601), lastError: record.lastError,
            createdAt: record.createdAt.formatted(.iso8601), updatedAt: record.updatedAt.formatted(.iso8601))
    }

    /// A changed session as its event showed it (built once, when the change committed).
    init(_ shown: Shown<CustomerSessionRecord>) {
        self = shown.view as? Self ?? Self(shown.record)
    }
}

extension CustomerAdapter {
    /// The session's adapter as the contract shows it (redacted first: see `SessionAdapter.redacted`).
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

extension SessionAdapter {
    /// `customer.open`'s adapter as the session stores it.
    init(_ adapter: CustomerAdapter) {
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

extension SessionAdapter.KeyProvider {
    init(_ provider: CustomerAdapter.KeyProvider) {
        let kind: Kind =
            switch provider.kind {
            case .backend: .backend
            case .app: .app
            case .server: .server
            }
        self.init(kind: kind, url: provider.url, authorization: provider.authorization, customer: provider.customer)
    }
}

import Foundation
import JSONRPC
import StpdBackends
import StpdCore
import StpdProtocol
import StripeAPI

/// Builds a session's backend from its adapter: the daemon's Stripe client and HTTP transport
/// for `stripe` and `backend` sessions, the app-request broker for `app` ones (and app keys).
/// A server-key session is checked against `serverKeyAccess` here, each time its backend is made:
/// at `customer.open` (owner: the caller's uid) and again after a restart, so narrowing the
/// allow-list also stops the sessions it no longer allows.
struct DaemonBackendFactory: CustomerBackendFactory {
    let stripe: StripeSetup
    let broker: AppRequestBroker
    let serverKeyAccess: ServerKeyAccess

    func makeBackend(session: String, owner: UInt32, adapter: SessionAdapter) throws -> any CustomerBackend {
        let timeout = Duration.milliseconds(Int64((adapter.timeout ?? 30) * 1000))
        let applePay = adapter.includeApplePayPaymentMethods ?? false
        switch adapter.kind {
        case .stripe where adapter.keyProvider?.kind == .server:
            try serverKeyAccess.check(uid: owner, customer: adapter.keyProvider?.customer ?? "")
            // The daemon's own key authorizes customer calls: it must be able to.
            let client = try stripe.client(requiring: [.secret, .restricted])
            let keys = ServerKeySource(key: client.configuration.key, customer: adapter.keyProvider?.customer ?? "")
            return StripeCustomerContext(keys: keys, stripe: client, includeApplePay: applePay)
        case .stripe:
            // Customer calls carry the ephemeral key; any configured key kind may sit beside it.
            let client = try stripe.client(requiring: [.publishable, .secret, .restricted])
            let provider: any EphemeralKeyProvider
            switch adapter.keyProvider?.kind ?? .app {
            case .backend:
                provider = try configured("adapter.keyProvider.url") {
                    try BackendKeyProvider(
                        url: adapter.keyProvider?.url ?? "", authorization: adapter.keyProvider?.authorization,
                        timeout: timeout, transport: stripe.transport)
                }
            case .app, .server:
                provider = AppKeyProvider(broker: broker, ownerUID: owner, session: session, timeout: timeout)
            }
            return StripeCustomerContext(
                keys: EphemeralKeyManager(provider: provider), stripe: client, includeApplePay: applePay)
        case .backend:
            return try configured("adapter.url") {
                try MerchantBackend(
                    baseURL: adapter.url ?? "", authorization: adapter.authorization, timeout: timeout,
                    includeApplePay: applePay, transport: stripe.transport)
            }
        case .app:
            return AppCustomerBackend(
                broker: broker, ownerUID: owner, session: session, includeApplePay: applePay, timeout: timeout)
        }
    }

    /// A URL or credential the backend refuses is a bad parameter of `customer.open`: `parameter`
    /// names the adapter's URL member; its sibling `authorization` or `timeout` when those failed.
    private func configured<T>(_ parameter: String, _ make: () throws -> T) throws -> T {
        do { return try make() } catch let error as BackendConfigurationError {
            let parent = parameter.split(separator: ".").dropLast().joined(separator: ".")
            let member =
                if error.setting.hasPrefix("Authorization") {
                    "\(parent).authorization"
                } else if error.setting.hasSuffix("timeout") { "adapter.timeout" } else { parameter }
            throw RPCError.invalidParams(String(describing: error), parameter: member)
        }
    }
}

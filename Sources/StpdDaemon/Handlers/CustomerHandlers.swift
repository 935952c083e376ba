import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `customer.*`.
enum CustomerHandlers {
    static func register(into router: inout MethodRouter<CallContext>, sessions: CustomerSessions) {
        router.register(CustomerOpen.self) { params, context in
            try validate(params.adapter)
            return CustomerSessionView(
                try await sessions.open(
                    for: context.caller, adapter: SessionAdapter(params.adapter), prefetch: params.prefetch ?? true))
        }
        router.registerReads(
            CustomerListing.self, get: { CustomerSessionView(try await sessions.get(id: $0, for: $1)) },
            list: {
                let (records, hasMore) = try await sessions.list(for: $0, status: $1, startingAfter: $2, limit: $3)
                return (records.map { CustomerSessionView($0) }, hasMore)
            })
        router.register(CustomerRetrieve.self) { params, context in
            .init(
                customer: try await sessions.retrieveCustomer(id: params.session, for: context.caller)
                    .allResponseFields)
        }
        router.register(CustomerListPaymentMethods.self) { params, context in
            .init(
                paymentMethods: try await sessions.listPaymentMethods(id: params.session, for: context.caller)
                    .map(\.allResponseFields))
        }
        router.register(CustomerAttachPaymentMethod.self) { params, context in
            CustomerSessionView(
                try await sessions.attach(id: params.session, paymentMethod: params.paymentMethod, for: context.caller))
        }
        router.register(CustomerDetachPaymentMethod.self) { params, context in
            CustomerSessionView(
                try await sessions.detach(id: params.session, paymentMethod: params.paymentMethod, for: context.caller))
        }
        router.register(CustomerUpdateShipping.self) { params, context in
            CustomerSessionView(
                try await sessions.updateShipping(
                    id: params.session, shipping: params.shipping.stripeAddress, for: context.caller))
        }
        router.register(CustomerSelectPaymentMethod.self) { params, context in
            CustomerSessionView(
                try await sessions.select(id: params.session, paymentMethod: params.paymentMethod, for: context.caller))
        }
        router.register(CustomerClearCache.self) { params, context in
            CustomerSessionView(try await sessions.clearCache(id: params.session, for: context.caller))
        }
        router.register(CustomerClose.self) { params, context in
            CustomerSessionView(try await sessions.close(id: params.session, for: context.caller))
        }
    }

    /// What the schema cannot say: which members each adapter kind needs, and that members of
    /// another kind are mistakes (as unknown members are), not silently ignored.
    static func validate(_ adapter: CustomerAdapter) throws {
        if adapter.kind != .stripe, adapter.keyProvider != nil {
            throw RPCError.invalidParams("only stripe sessions take a keyProvider", parameter: "adapter.keyProvider")
        }
        if adapter.kind != .backend, adapter.url != nil || adapter.authorization != nil {
            let member = adapter.url != nil ? "adapter.url" : "adapter.authorization"
            throw RPCError.invalidParams("only backend sessions take url and authorization", parameter: member)
        }
        if let provider = adapter.keyProvider {
            if provider.kind != .backend, provider.url != nil || provider.authorization != nil {
                throw RPCError.invalidParams(
                    "only a backend key provider takes url and authorization", parameter: "adapter.keyProvider.url")
            }
            if provider.kind != .server, provider.customer != nil {
                throw RPCError.invalidParams(
                    "only a server key provider takes customer", parameter: "adapter.keyProvider.customer")
            }
        }
        switch adapter.kind {
        case .stripe:
            guard let provider = adapter.keyProvider else {
                throw RPCError.invalidParams("stripe sessions need a keyProvider", parameter: "adapter.keyProvider")
            }
            if provider.kind == .backend, provider.url == nil {
                throw RPCError.invalidParams(
                    "a backend key provider needs its url", parameter: "adapter.keyProvider.url")
            }
            if provider.kind == .server, provider.customer == nil {
                throw RPCError.invalidParams(
                    "a server key provider needs the customer id", parameter: "adapter.keyProvider.customer")
            }
        case .backend:
            guard adapter.url != nil else {
                throw RPCError.invalidParams("backend sessions need url", parameter: "adapter.url")
            }
        case .app:
            break
        }
    }
}

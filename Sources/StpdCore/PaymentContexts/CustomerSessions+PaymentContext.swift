import StripeAPI

/// A payment context reaches its customer through the session it names, as the session's owner.
extension CustomerSessions: PaymentContextCustomer {
    public func requireOpen(session: String, as caller: Caller) async throws {
        _ = try await openRecord(session, caller)
    }

    public func clearCache(session: String, as caller: Caller) async throws {
        _ = try await clearCache(id: session, for: caller)
    }

    public func retrieveCustomer(session: String, as caller: Caller) async throws -> Customer {
        try await retrieveCustomer(id: session, for: caller)
    }

    public func listPaymentMethods(session: String, as caller: Caller) async throws -> [PaymentMethod] {
        try await listPaymentMethods(id: session, for: caller)
    }

    public func attach(session: String, paymentMethod: String, as caller: Caller) async throws {
        _ = try await attach(id: session, paymentMethod: paymentMethod, for: caller)
    }

    public func detach(session: String, paymentMethod: String, as caller: Caller) async throws {
        _ = try await detach(id: session, paymentMethod: paymentMethod, for: caller)
    }

    public func updateShipping(session: String, address: StripeAddress, as caller: Caller) async throws {
        _ = try await updateShipping(id: session, shipping: address, for: caller)
    }

    public func select(session: String, paymentMethod: String?, as caller: Caller) async throws {
        guard try await keepsLastSelected(session, caller) else { return }
        _ = try await select(id: session, paymentMethod: paymentMethod, for: caller)
    }

    public func lastSelected(session: String, customer: String, as caller: Caller) async throws -> String? {
        guard try await keepsLastSelected(session, caller) else { return nil }
        return try await lastSelected(customer: customer, owner: caller.uid)
    }

    /// The SDK keeps the last selected payment method for `STPCustomerContext` alone (23.x's
    /// STPPaymentContext and STPPaymentOptionsViewController test `apiAdapter is STPCustomerContext`):
    /// a payment context of a `stripe` session remembers and reads it, one of any other adapter not.
    private func keepsLastSelected(_ session: String, _ caller: Caller) async throws -> Bool {
        try await table.get(session, for: caller).adapter.kind == .stripe
    }
}

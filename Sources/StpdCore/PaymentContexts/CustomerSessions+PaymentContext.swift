import StripeAPI

/// A payment context reaches its customer through the session it names, as the session's owner.
extension CustomerSessions: PaymentContextCustomer {
    public func clearCache(session: String, owner: UInt32) async throws {
        _ = try await clearCache(id: session, for: Caller(uid: owner))
    }

    public func retrieveCustomer(session: String, owner: UInt32) async throws -> Customer {
        try await retrieveCustomer(id: session, for: Caller(uid: owner))
    }

    public func listPaymentMethods(session: String, owner: UInt32) async throws -> [PaymentMethod] {
        try await listPaymentMethods(id: session, for: Caller(uid: owner))
    }

    public func attach(session: String, paymentMethod: String, owner: UInt32) async throws {
        _ = try await attach(id: session, paymentMethod: paymentMethod, for: Caller(uid: owner))
    }

    public func detach(session: String, paymentMethod: String, owner: UInt32) async throws {
        _ = try await detach(id: session, paymentMethod: paymentMethod, for: Caller(uid: owner))
    }

    public func updateShipping(session: String, address: StripeAddress, owner: UInt32) async throws {
        _ = try await updateShipping(id: session, shipping: address, for: Caller(uid: owner))
    }

    public func select(session: String, paymentMethod: String?, owner: UInt32) async throws {
        _ = try await select(id: session, paymentMethod: paymentMethod, for: Caller(uid: owner))
    }

    public func lastSelected(session: String, customer: String, owner: UInt32) async throws -> String? {
        try await lastSelected(customer: customer, owner: owner)
    }
}

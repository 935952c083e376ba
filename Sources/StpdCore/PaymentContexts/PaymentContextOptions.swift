import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// What the SDK's payment options and shipping screens do, as RPCs.
extension PaymentContexts {
    /// The options screen's selection: remembered as the customer's last selected; a requestPayment
    /// waiting for it goes on.
    public func select(id: String, viewer: UInt32?, paymentMethod: String) async throws -> PaymentContextView {
        let record = try record(id, viewer, open: true)
        guard record.options.contains(where: { $0.id == paymentMethod }) else {
            throw StpdErrors.notFound(
                "\(paymentMethod) is not one of the context's payment options",
                data: ["paymentMethod": .string(paymentMethod)])
        }
        try await customers.select(session: record.session, paymentMethod: paymentMethod, owner: record.owner)
        let view = try await update(id) { record in
            record.selected = paymentMethod
            return "paymentContext.didChange"
        }
        return try await continueIfWaiting(id, for: "paymentOption") ?? view
    }

    /// The options screen's "add card": create, attach through the adapter, select, remember.
    public func addCard(id: String, viewer: UInt32?, card: CardInput) async throws -> PaymentContextView {
        let record = try record(id, viewer, open: true)
        let method = try await api.createCardPaymentMethod(card)
        try await customers.attach(session: record.session, paymentMethod: method.id, owner: record.owner)
        try await customers.select(session: record.session, paymentMethod: method.id, owner: record.owner)
        let view = try await update(id) { record in
            record.options.removeAll { $0.id == method.id }
            record.options.append(PaymentContextRecord.option(method))
            record.options.sort { $0.label < $1.label }
            record.selected = method.id
            return "paymentContext.didChange"
        }
        return try await continueIfWaiting(id, for: "paymentOption") ?? view
    }

    /// Deleting an option: detached through the adapter; if it was selected, the first remaining one is.
    public func remove(id: String, viewer: UInt32?, paymentMethod: String) async throws -> PaymentContextView {
        let record = try record(id, viewer, open: true)
        guard record.configuration.canDeletePaymentOptions ?? true else {
            throw StpdErrors.invalidState(
                "the configuration forbids deleting payment options", data: ["state": "canDeletePaymentOptions"])
        }
        guard record.options.contains(where: { $0.id == paymentMethod }) else {
            throw StpdErrors.notFound(
                "\(paymentMethod) is not one of the context's payment options",
                data: ["paymentMethod": .string(paymentMethod)])
        }
        try await customers.detach(session: record.session, paymentMethod: paymentMethod, owner: record.owner)
        return try await update(id) { record in
            record.options.removeAll { $0.id == paymentMethod }
            if record.selected == paymentMethod { record.selected = record.options.first?.id }
            return "paymentContext.didChange"
        }
    }

    /// The shipping screen's submit: asks the app when it validates addresses (shipping type
    /// `shipping`), else accepts the address as the SDK does without the delegate method.
    public func setShippingAddress(id: String, viewer: UInt32?, address: ShippingAddressParams) async throws
        -> PaymentContextView
    {
        let record = try record(id, viewer, open: true)
        guard record.pending?.kind != "didUpdateShippingAddress" else {
            throw StpdErrors.invalidState(
                "an address is being validated by the app", data: ["state": "didUpdateShippingAddress"])
        }
        guard record.validatesShipping, record.shippingType == "shipping" else {
            return try await acceptShipping(id, address: address, methods: nil, selected: nil)
        }
        return try await ask(
            id, kind: "didUpdateShippingAddress", payload: ["address": try JSONCoding.value(of: address)])
    }

    public func selectShippingMethod(id: String, viewer: UInt32?, shippingMethod: String) async throws
        -> PaymentContextView
    {
        let record = try record(id, viewer, open: true)
        guard record.shippingMethods?.contains(where: { $0.identifier == shippingMethod }) == true else {
            throw StpdErrors.notFound(
                "\(shippingMethod) is not one of the shipping methods",
                data: ["shippingMethod": .string(shippingMethod)])
        }
        return try await update(id) { record in
            record.selectedShippingMethod = shippingMethod
            return "paymentContext.didChange"
        }
    }

    /// The SDK's finish(address, method): set, no longer needing verification, saved to the customer
    /// afterwards (fire and forget: a failure is an event, not the caller's error).
    func acceptShipping(
        _ id: String, address: ShippingAddressParams, methods: [ShippingMethod]?, selected: String?
    ) async throws -> PaymentContextView {
        let view = try await update(id) { record in
            record.shippingAddress = address
            record.shippingNeedsVerification = false
            record.setShippingMethods(methods, preferred: selected)
            return "paymentContext.didChange"
        }
        if let record = records.withLock({ $0[id] }) {
            background.start { [self] in
                do {
                    try await customers.updateShipping(
                        session: record.session, address: address.stripeAddress, owner: record.owner)
                } catch {
                    let failure = RPCError.json(error)
                    _ = try? await update(id) { record in
                        record.lastShippingSaveError = failure
                        return "paymentContext.shippingSaveFailed"
                    }
                }
            }
        }
        return try await continueIfWaiting(id, for: "shippingAddress") ?? view
    }

    public func close(id: String, viewer: UInt32?) async throws -> PaymentContextView {
        let record = try record(id, viewer)
        guard record.status == "open" else { return record.view }
        if let action = record.pending?.id { endTimer(action) }
        return try await update(id) { record in
            record.status = "closed"
            record.pending = nil
            return "paymentContext.closed"
        }
    }
}

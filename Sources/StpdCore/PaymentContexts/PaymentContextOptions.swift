import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// What the SDK's payment options and shipping screens do, as RPCs.
extension PaymentContexts {
    /// The options screen's selection: remembered as the customer's last selected; a requestPayment
    /// waiting for it goes on.
    public func select(id: String, for caller: Caller, paymentMethod: String) async throws -> PaymentContextRecord {
        let record = try await record(id, caller, open: true)
        try Self.requireOption(paymentMethod, in: record)
        // Checked again on the latest state: the option may have been removed meanwhile.
        let selected = try await update(id, for: caller) { record in
            try Self.requireOption(paymentMethod, in: record)
            record.selected = paymentMethod
            return .didChange
        }
        remember(paymentMethod, for: record)
        return try await continueIfWaiting(id, for: .paymentOption) ?? selected
    }

    /// The options screen saves the choice as the customer's last selected and goes on without
    /// waiting (`saveLastSelectedPaymentMethodID(…, completion: nil)`): a save that fails changes
    /// nothing the customer chose.
    private func remember(_ paymentMethod: String, for record: PaymentContextRecord) {
        background.start { [customers] in
            try? await customers.select(session: record.session, paymentMethod: paymentMethod, as: record.caller)
        }
    }

    /// The options screen's "add card": create, attach through the adapter, select, remember.
    public func addCard(id: String, for caller: Caller, card: CardInput) async throws -> PaymentContextRecord {
        let record = try await record(id, caller, open: true)
        try await CardValidator(now: now, metadata: cardMetadata).require(card, for: caller)
        try Self.requireBillingFields(record.configuration.requiredBillingAddressFields ?? "postalCode", of: card)
        let method = try await api.createCardPaymentMethod(card)
        try await customers.attach(session: record.session, paymentMethod: method.id, as: record.caller)
        let added = try await update(id, for: caller) { record in
            record.options.removeAll { $0.id == method.id }
            record.options.append(PaymentContextRecord.option(method))
            record.options.sort { $0.label < $1.label }
            record.selected = method.id
            return .didChange
        }
        remember(method.id, for: record)
        return try await continueIfWaiting(id, for: .paymentOption) ?? added
    }

    /// Deleting an option: detached through the adapter; if it was selected, the first remaining one is.
    public func remove(id: String, for caller: Caller, paymentMethod: String) async throws -> PaymentContextRecord {
        let record = try await record(id, caller, open: true)
        guard record.configuration.canDeletePaymentOptions ?? true else {
            throw DomainError.invalidState(
                .paymentContext, id: id, state: "canDeletePaymentOptions",
                detail: "the configuration forbids deleting payment options")
        }
        try Self.requireOption(paymentMethod, in: record)
        try await customers.detach(session: record.session, paymentMethod: paymentMethod, as: record.caller)
        return try await update(id, for: caller) { record in
            record.options.removeAll { $0.id == paymentMethod }
            if record.selected == paymentMethod { record.selected = record.options.first?.id }
            return .didChange
        }
    }

    /// The shipping screen's submit: refused, as the SDK's form does not submit it, unless the address
    /// holds the configuration's `requiredShippingAddressFields` (none required: any address); then
    /// the app is asked when it validates addresses (shipping type `shipping`), else the address is
    /// accepted as the SDK does without the delegate method.
    public func setShippingAddress(id: String, for caller: Caller, address: ShippingAddressParams) async throws
        -> PaymentContextRecord
    {
        let record = try await record(id, caller, open: true)
        guard record.pending?.kind != .didUpdateShippingAddress else {
            throw DomainError.invalidState(
                .paymentContext, id: id, state: PendingActionKind.didUpdateShippingAddress.rawValue,
                detail: "an address is being validated by the app")
        }
        let missing = address.missing(requiredFields: record.configuration.requiredShippingAddressFields ?? [])
        guard missing.isEmpty else {
            throw DomainError.shippingAddressIncomplete(
                fields: missing.map(\.field), members: missing.flatMap(\.members))
        }
        guard record.validatesShipping, record.shippingType == "shipping" else {
            return try await acceptShipping(id, for: caller, address: address, answer: nil)
        }
        return try await ask(
            id, for: caller, kind: .didUpdateShippingAddress, payload: ["address": try JSONCoding.value(of: address)])
    }

    public func selectShippingMethod(id: String, for caller: Caller, shippingMethod: String) async throws
        -> PaymentContextRecord
    {
        return try await update(id, for: caller) { record in
            guard record.status == .open else { return nil }
            guard record.shippingMethods?.contains(where: { $0.identifier == shippingMethod }) == true else {
                throw DomainError.notInObject(
                    .paymentContext, id: id, member: "shippingMethod", value: shippingMethod,
                    detail: "\(shippingMethod) is not one of the shipping methods")
            }
            record.selectedShippingMethod = shippingMethod
            return .didChange
        }
    }

    /// The SDK's finish(address, method): set, no longer needing verification, saved to the customer
    /// afterwards (fire and forget: a failure is an event, not the caller's error). `answer` nil: the
    /// app was not asked (delivery, or it does not validate), and the SDK finishes with no method,
    /// which clears the selected one (the list it had stays). An answer stores its list as given, no
    /// list as none (the SDK's `shippingMethods = nil`), and finishes with no method without one.
    func acceptShipping(
        _ id: String, for caller: Caller, address: ShippingAddressParams,
        answer: (methods: [ShippingMethodOffer]?, selected: String?)?
    ) async throws -> PaymentContextRecord {
        let accepted = try await update(id, for: caller) { record in
            record.shippingAddress = address
            record.shippingNeedsVerification = false
            if let answer {
                record.setShippingMethods(
                    answer.methods, preferred: answer.selected)
            }
            if answer?.methods == nil { record.selectedShippingMethod = nil }
            return .didChange
        }
        background.start { [self] in
            do {
                try await customers.updateShipping(
                    session: accepted.session, address: address.stripeAddress, as: accepted.caller)
            } catch {
                let failure = Failure(error, describedBy: table.log.failures)
                _ = try? await update(id) { record in
                    record.lastShippingSaveError = failure
                    return .shippingSaveFailed
                }
            }
        }
        return try await continueIfWaiting(id, for: .shippingAddress) ?? accepted
    }

    public func close(id: String, for caller: Caller) async throws -> PaymentContextRecord {
        let closed = try await update(id, for: caller) { record in
            guard record.status == .open else { return nil }
            record.status = .closed
            record.pending = nil
            return .closed
        }
        // Whatever still runs for it, on any daemon, stops.
        await work.stop(Self.loadingLease(id))
        await work.stop(Self.managedLease(id))
        return closed
    }

    /// The SDK's add-card form does not submit until `STPAddress.containsRequiredFields` holds for
    /// the configuration's `requiredBillingAddressFields`: `postalCode` a postal code valid for the
    /// country (any text when there is none), `name` the cardholder's name, `full` a postal address
    /// (line1, city, country, a US state, a valid postal code). The country is the card's billing
    /// `country`, the form's country field; where the form would start from the device's region,
    /// stpd takes none (a daemon's locale is its host's, not the customer's). The input an error
    /// names is the card's field (`zip`).
    static func requireBillingFields(_ level: String, of card: CardInput) throws {
        func missing(_ field: String, _ detail: String) -> DomainError {
            .invalidInput(input: field, detail: "\(detail) (requiredBillingAddressFields \(level))")
        }
        let country = card.country ?? ""
        let postalCodeValid = AddressFields.postalCodeState(card.zip ?? "", country: card.country) == .valid
        switch level {
        case "postalCode", "zip":
            guard postalCodeValid else { throw missing("zip", "a valid postal code is required") }
        case "name":
            guard !(card.name ?? "").isEmpty else { throw missing("name", "the cardholder's name is required") }
        case "full":
            for (field, value) in [("addressLine1", card.addressLine1), ("city", card.city), ("country", card.country)]
            where (value ?? "").isEmpty {
                throw missing(field, "a full billing address is required")
            }
            if country == "US", (card.state ?? "").isEmpty { throw missing("state", "a US address needs a state") }
            guard postalCodeValid else { throw missing("zip", "a valid postal code is required") }
        default:
            break
        }
    }

    static func requireOption(_ paymentMethod: String, in record: PaymentContextRecord) throws {
        guard record.options.contains(where: { $0.id == paymentMethod }) else {
            throw DomainError.notInObject(
                .paymentContext, id: record.id, member: "paymentMethod", value: paymentMethod,
                detail: "\(paymentMethod) is not one of the context's payment options")
        }
    }
}

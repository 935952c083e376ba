import StpdValues

/// The app's completion of a pending action (`PaymentContexts.answer`): a payment status for
/// didCreatePaymentResult, valid or invalid for didUpdateShippingAddress, with the app's error or,
/// for a valid address, the shipping methods it offers.
public struct PendingActionCompletion: Sendable, Hashable {
    public var action: String
    public var status: PendingActionAnswer
    /// Why the app refused (error, invalid): shown to the customer.
    public var error: AppRequestFailure?
    public var shippingMethods: [ShippingMethodOffer]?
    public var selectedShippingMethod: String?

    public init(
        action: String, status: PendingActionAnswer, error: AppRequestFailure? = nil,
        shippingMethods: [ShippingMethodOffer]? = nil, selectedShippingMethod: String? = nil
    ) {
        self.action = action
        self.status = status
        self.error = error
        self.shippingMethods = shippingMethods
        self.selectedShippingMethod = selectedShippingMethod
    }
}

/// A shipping method the app offers for an address (PKShippingMethod); its amount in minor units.
/// A payment context stores it as it is (`PaymentContextRecord.ShippingMethod`).
public struct ShippingMethodOffer: Codable, Sendable, Hashable {
    public var identifier: String
    public var label: String
    public var detail: String?
    public var amount: Int

    public init(identifier: String, label: String, detail: String? = nil, amount: Int) {
        self.identifier = identifier
        self.label = label
        self.detail = detail
        self.amount = amount
    }
}

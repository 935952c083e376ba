/// The SDK's `STPPaymentConfiguration` as a payment context is created with and keeps it
/// (`PaymentContextRecord.Configuration`); nil members: the SDK's defaults.
public struct PaymentContextConfiguration: Codable, Sendable, Hashable {
    /// `none`, `postalCode` (default), `full`, `name`: what a new card's billing address needs.
    public var requiredBillingAddressFields: String?
    /// Any of `postalAddress`, `emailAddress`, `phoneNumber`, `name`; none by default.
    public var requiredShippingAddressFields: [String]?
    /// `shipping` (default) or `delivery` (an address is accepted without asking the app).
    public var shippingType: String?
    /// Ask again for a shipping address that came from the customer or prefilled (default true).
    public var verifyPrefilledShippingAddress: Bool?
    /// The total's label (default: the merchant name, else the calling app's name).
    public var companyName: String?
    public var canDeletePaymentOptions: Bool?

    public init(
        requiredBillingAddressFields: String? = nil, requiredShippingAddressFields: [String]? = nil,
        shippingType: String? = nil, verifyPrefilledShippingAddress: Bool? = nil, companyName: String? = nil,
        canDeletePaymentOptions: Bool? = nil
    ) {
        self.requiredBillingAddressFields = requiredBillingAddressFields
        self.requiredShippingAddressFields = requiredShippingAddressFields
        self.shippingType = shippingType
        self.verifyPrefilledShippingAddress = verifyPrefilledShippingAddress
        self.companyName = companyName
        self.canDeletePaymentOptions = canDeletePaymentOptions
    }
}

/// One of the app's own paymentSummaryItems (the last is the total); its amount in minor units.
/// A payment context stores them as they are (`PaymentContextRecord.SummaryItem`).
public struct AppSummaryItem: Codable, Sendable, Hashable {
    public var label: String
    public var amount: Int

    public init(label: String, amount: Int) {
        self.label = label
        self.amount = amount
    }
}

import StpdCore
import StpdProtocol

// A payment context's wire params as the domain takes them (docs/architecture.md: the contract's
// types are mapped to the domain's and back here, at the edge).

extension PendingActionCompletion {
    init(_ params: PaymentContextAnswer.Params) {
        self.init(
            action: params.action, status: params.status,
            error: params.error.map { AppRequestFailure(message: $0.message, code: $0.code) },
            shippingMethods: params.shippingMethods?.map(ShippingMethodOffer.init),
            selectedShippingMethod: params.selectedShippingMethod)
    }
}

extension ShippingMethodOffer {
    init(_ wire: ShippingMethod) {
        self.init(identifier: wire.identifier, label: wire.label, detail: wire.detail, amount: wire.amount)
    }
}

extension PaymentContextConfiguration {
    init(_ wire: PaymentConfiguration) {
        self.init(
            requiredBillingAddressFields: wire.requiredBillingAddressFields,
            requiredShippingAddressFields: wire.requiredShippingAddressFields, shippingType: wire.shippingType,
            verifyPrefilledShippingAddress: wire.verifyPrefilledShippingAddress, companyName: wire.companyName,
            canDeletePaymentOptions: wire.canDeletePaymentOptions)
    }
}

extension AppSummaryItem {
    init(_ wire: PaymentSummaryItemInput) { self.init(label: wire.label, amount: wire.amount) }
}

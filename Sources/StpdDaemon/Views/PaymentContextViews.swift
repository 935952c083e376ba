import Foundation
import JSONRPC
import StpdCore
import StpdProtocol

// A payment context as the contract shows it, in replies and in the events `WireViews` gives the
// log; and its wire params as the domain takes them (docs/architecture.md: the contract's types
// are mapped to the domain's and back here, at the edge).

extension PaymentContextView {
    init(_ record: PaymentContextRecord, _ failures: any FailureRenderer = WireViews.failures) {
        self.init(
            id: record.id, customerSession: record.session, status: record.status, amount: record.amount,
            currency: record.currency, country: record.country,
            configuration: PaymentConfiguration(record.configuration), validatesShipping: record.validatesShipping,
            loading: record.loading, loadError: record.loadError.map(failures.render),
            paymentOptions: record.options.map(Option.init), selectedPaymentMethod: record.selected,
            shippingAddress: record.shippingAddress,
            shippingAddressNeedsVerification: record.shippingNeedsVerification,
            shippingMethods: record.shippingMethods?.map(ShippingMethod.init),
            selectedShippingMethod: record.selectedShippingMethod,
            paymentSummaryItems: record.paymentSummaryItems.map(SummaryItem.init),
            paymentAmount: record.paymentAmount, isReadyForPayment: record.isReadyForPayment,
            requestState: record.requestState, needs: record.needs,
            pendingAction: record.pending.map(PendingAction.init), redirect: record.redirect,
            // Its error member is there when there is none (null): the contract's shape since 0.1.
            lastResult: record.lastResult.map {
                ["status": .string($0.status.rawValue), "error": $0.error.map(failures.render) ?? .null]
            },
            shippingError: record.shippingError.map(failures.render),
            shippingSaveError: record.lastShippingSaveError.map(failures.render),
            createdAt: record.createdAt.formatted(.iso8601), updatedAt: record.updatedAt.formatted(.iso8601))
    }
}

extension PaymentConfiguration {
    init(_ stored: PaymentContextConfiguration) {
        self.init(
            requiredBillingAddressFields: stored.requiredBillingAddressFields,
            requiredShippingAddressFields: stored.requiredShippingAddressFields, shippingType: stored.shippingType,
            verifyPrefilledShippingAddress: stored.verifyPrefilledShippingAddress, companyName: stored.companyName,
            canDeletePaymentOptions: stored.canDeletePaymentOptions)
    }
}

extension PaymentContextView.Option {
    init(_ option: PaymentContextRecord.Option) {
        self.init(id: option.id, label: option.label, type: option.type, paymentMethod: option.paymentMethod)
    }
}

extension PaymentContextView.SummaryItem {
    init(_ item: PaymentSummaryItem) { self.init(label: item.label, amount: item.amount, decimal: item.decimal) }
}

extension PaymentContextView.PendingAction {
    init(_ pending: PaymentContextRecord.Pending) {
        self.init(
            id: pending.id, kind: pending.kind, deadline: pending.deadline.formatted(.iso8601), payload: pending.payload
        )
    }
}

extension ShippingMethod {
    init(_ offer: ShippingMethodOffer) {
        self.init(identifier: offer.identifier, label: offer.label, detail: offer.detail, amount: offer.amount)
    }
}

extension ShippingMethodOffer {
    init(_ wire: ShippingMethod) {
        self.init(identifier: wire.identifier, label: wire.label, detail: wire.detail, amount: wire.amount)
    }
}

extension PendingActionCompletion {
    init(_ params: PaymentContextAnswer.Params) {
        self.init(
            action: params.action, status: params.status,
            error: params.error.map { AppRequestFailure(message: $0.message, code: $0.code) },
            shippingMethods: params.shippingMethods?.map(ShippingMethodOffer.init),
            selectedShippingMethod: params.selectedShippingMethod)
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

extension PaymentContextTerms {
    init(_ params: PaymentContextCreate.Params) {
        self.init(
            session: params.session, amount: params.amount ?? 0, currency: params.currency, country: params.country,
            configuration: params.configuration.map(PaymentContextConfiguration.init),
            validatesShipping: params.validatesShipping ?? false,
            prefilledShippingAddress: params.prefilledShippingAddress,
            defaultPaymentMethod: params.defaultPaymentMethod, pendingActionTimeout: params.pendingActionTimeout)
    }
}

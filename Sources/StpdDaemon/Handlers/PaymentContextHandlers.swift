import JSONRPC
import StpdCore
import StpdProtocol

/// `paymentContext.*`: the params mapped to the domain's, the records the service returns shown
/// as the contract's `PaymentContextView` (`Views/PaymentContextViews.swift`).
enum PaymentContextHandlers {
    static func register(into router: inout MethodRouter<CallContext>, contexts: PaymentContexts) {
        router.register(PaymentContextCreate.self) { params, context in
            PaymentContextView(try await contexts.create(for: context.caller, PaymentContextTerms(params)))
        }
        router.registerReads(
            PaymentContextListing.self, get: { PaymentContextView(try await contexts.get(id: $0, for: $1)) },
            list: {
                let (records, hasMore) = try await contexts.list(
                    for: $0, status: $1, startingAfter: $2, limit: $3)
                return (records.map { PaymentContextView($0) }, hasMore)
            })
        router.register(PaymentContextRetryLoading.self) { params, context in
            PaymentContextView(try await contexts.retryLoading(id: params.context, for: context.caller))
        }
        router.register(PaymentContextUpdate.self) { params, context in
            let total: PaymentContexts.Total? =
                switch params.total {
                case .amount(let amount)?: .amount(amount)
                case .paymentSummaryItems(let items)?: .summaryItems(items.map(AppSummaryItem.init))
                case nil: nil
                }
            return PaymentContextView(
                try await contexts.setAmount(
                    id: params.context, for: context.caller, total: total, currency: params.currency,
                    country: params.country))
        }
        router.register(PaymentContextSelectPaymentMethod.self) { params, context in
            PaymentContextView(
                try await contexts.select(id: params.context, for: context.caller, paymentMethod: params.paymentMethod))
        }
        router.register(PaymentContextAddCard.self) { params, context in
            try await naming(inputsInside: "card") {
                PaymentContextView(
                    try await contexts.addCard(id: params.context, for: context.caller, card: params.card))
            }
        }
        router.register(PaymentContextRemovePaymentMethod.self) { params, context in
            PaymentContextView(
                try await contexts.remove(id: params.context, for: context.caller, paymentMethod: params.paymentMethod))
        }
        router.register(PaymentContextSetShippingAddress.self) { params, context in
            PaymentContextView(
                try await contexts.setShippingAddress(id: params.context, for: context.caller, address: params.address))
        }
        router.register(PaymentContextSelectShippingMethod.self) { params, context in
            PaymentContextView(
                try await contexts.selectShippingMethod(
                    id: params.context, for: context.caller, shippingMethod: params.shippingMethod))
        }
        router.register(PaymentContextRequestPayment.self) { params, context in
            try PaymentMethodInput.checkReturnURL(params.paymentIntent?.returnURL, parameter: "paymentIntent.returnURL")
            return PaymentContextView(
                try await contexts.requestPayment(
                    id: params.context, for: context.caller,
                    paymentIntent: params.paymentIntent.map { ($0.clientSecret, $0.returnURL) }))
        }
        router.register(PaymentContextAnswer.self) { params, context in
            PaymentContextView(try await contexts.answer(for: context.caller, PendingActionCompletion(params)))
        }
        router.register(PaymentContextCancel.self) { params, context in
            PaymentContextView(try await contexts.cancel(id: params.context, for: context.caller))
        }
        router.register(PaymentContextClose.self) { params, context in
            PaymentContextView(try await contexts.close(id: params.context, for: context.caller))
        }
    }
}

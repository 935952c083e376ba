import JSONRPC
import StpdCore
import StpdProtocol

/// `paymentContext.*`.
enum PaymentContextHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, contexts: PaymentContexts, customers: CustomerSessions
    ) {
        router.register(PaymentContextCreate.self) { params, context in
            // The session must exist, be open and be the caller's.
            let session = try await customers.get(id: params.session, viewer: context.viewer)
            guard session.status == "open" else {
                throw StpdErrors.invalidState(
                    "customer session \(params.session) is closed", data: ["state": .string(session.status)])
            }
            return try await contexts.create(owner: context.uid, params)
        }
        router.register(PaymentContextGet.self) { params, context in
            try contexts.get(id: params.context, viewer: context.viewer)
        }
        router.register(PaymentContextList.self) { _, context in .init(contexts: contexts.list(viewer: context.viewer))
        }
        router.register(PaymentContextRetryLoading.self) { params, context in
            try await contexts.retryLoading(id: params.context, viewer: context.viewer)
        }
        router.register(PaymentContextUpdate.self) { params, context in
            try await contexts.setAmount(
                id: params.context, viewer: context.viewer, amount: params.amount, currency: params.currency,
                country: params.country)
        }
        router.register(PaymentContextSelectPaymentMethod.self) { params, context in
            try await contexts.select(id: params.context, viewer: context.viewer, paymentMethod: params.paymentMethod)
        }
        router.register(PaymentContextAddCard.self) { params, context in
            try await contexts.addCard(id: params.context, viewer: context.viewer, card: params.card)
        }
        router.register(PaymentContextRemovePaymentMethod.self) { params, context in
            try await contexts.remove(id: params.context, viewer: context.viewer, paymentMethod: params.paymentMethod)
        }
        router.register(PaymentContextSetShippingAddress.self) { params, context in
            try await contexts.setShippingAddress(id: params.context, viewer: context.viewer, address: params.address)
        }
        router.register(PaymentContextSelectShippingMethod.self) { params, context in
            try await contexts.selectShippingMethod(
                id: params.context, viewer: context.viewer, shippingMethod: params.shippingMethod)
        }
        router.register(PaymentContextRequestPayment.self) { params, context in
            try await contexts.requestPayment(
                id: params.context, viewer: context.viewer, paymentIntent: params.paymentIntent)
        }
        router.register(PaymentContextAnswer.self) { params, context in
            try await contexts.answer(by: context.uid, params)
        }
        router.register(PaymentContextCancel.self) { params, context in
            try await contexts.cancel(id: params.context, viewer: context.viewer)
        }
        router.register(PaymentContextClose.self) { params, context in
            try await contexts.close(id: params.context, viewer: context.viewer)
        }
    }
}

import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `paymentIntent.*` and `setupIntent.*`: one registration serves both kinds of intent.
enum IntentHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, handler: PaymentHandler, polls: IntentPollers,
        cards: CardValidator, returnURLs: ReturnURLs
    ) {
        register(
            PaymentIntent.self, into: &router, handler: handler, polls: polls.paymentIntents, cards: cards,
            returnURLs: returnURLs)
        register(
            SetupIntent.self, into: &router, handler: handler, polls: polls.setupIntents, cards: cards,
            returnURLs: returnURLs)
    }

    private static func register<Intent: StripeIntent>(
        _ type: Intent.Type, into router: inout MethodRouter<CallContext>, handler: PaymentHandler,
        polls: IntentPolls<Intent>, cards: CardValidator, returnURLs: ReturnURLs
    ) {
        typealias K = Intent.Naming
        router.register(IntentRetrieve<K>.self) { params, _ in
            let intent = try await handler.retrieve(Intent.self, clientSecret: params.clientSecret)
            return .init(intent: intent.clientFields, nextAction: intent.nextAction.map { NextActionView($0) })
        }
        router.register(IntentConfirm<K>.self) { params, context in
            try await cards.require(params.paymentMethod.card, at: "paymentMethod.card", for: context.caller)
            try await cards.require(
                params.paymentMethod.rawCard, at: "paymentMethod.raw.card", stripeNames: true, for: context.caller)
            var confirm = try params.confirmParams(setupIntent: Intent.kind == .setupIntent)
            return try await returnURLs.resolve(params.returnURL, for: context) {
                confirm.returnURL = $0
                return IntentAnswer(
                    try await handler.confirm(
                        Intent.self, confirm, for: context.caller,
                        start: params.start.map(RedirectSessions.StartOptions.init),
                        voucher: params.voucher ?? .open))
            }
        }
        router.register(IntentHandleNextAction<K>.self) { params, context in
            try PaymentMethodInput.checkReturnURL(params.returnURL)
            return try await returnURLs.resolve(params.returnURL, for: context) {
                IntentAnswer(
                    try await handler.handleNextAction(
                        Intent.self, clientSecret: params.clientSecret, returnURL: $0, for: context.caller,
                        start: params.start.map(RedirectSessions.StartOptions.init), voucher: params.voucher ?? .open))
            }
        }
        router.register(IntentVerifyMicrodeposits<K>.self) { params, context in
            let verify = VerifyMicrodepositsParams(clientSecret: params.clientSecret, proof: params.proof)
            return IntentAnswer(try await handler.verifyMicrodeposits(Intent.self, verify, for: context.caller))
        }
        router.registerReads(
            IntentListing<K>.self, get: { IntentView(try await polls.get(id: $0, for: $1)) },
            list: {
                let (records, hasMore) = try await polls.list(for: $0, status: $1, startingAfter: $2, limit: $3)
                return (records.map { IntentView($0) }, hasMore)
            })
        router.register(IntentStopPolling<K>.self) { params, context in
            IntentView(try await polls.stop(id: params.id, for: context.caller))
        }
    }
}

import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `card.*`, and the card checked wherever a method takes one (how a refused card reads:
/// `Errors/WireErrors.swift`).
enum CardHandlers {
    static func register(into router: inout MethodRouter<CallContext>, cards: CardValidator) {
        router.register(CardValidate.self) { params, context in
            CardValidate.Result(
                await cards.validate(
                    number: params.number, expMonth: params.expMonth, expYear: params.expYear, cvc: params.cvc,
                    for: context.caller))
        }
    }
}

extension CardValidator {
    /// Refuses `card`, if given, before any request to Stripe: CardInvalid naming the field under
    /// `path`, where the card sits in the method's params (in Stripe's field names, `exp_month`,
    /// with `stripeNames`: a `raw` card).
    /// UnionPay's variable-length prefixes are looked up for `caller` (`CardMetadataLookup`).
    func require(_ card: CardInput?, at path: String, stripeNames: Bool = false, for caller: Caller)
        async throws(RPCError)
    {
        guard let card else { return }
        do throws(CardRefused) { try await require(card, for: caller) } catch {
            throw error.rpcError(at: path, stripeNames: stripeNames)
        }
    }
}

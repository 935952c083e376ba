import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `card.*`, and how a refused card reads on the wire wherever a method takes one.
enum CardHandlers {
    static func register(into router: inout MethodRouter<CallContext>, cards: CardValidator) {
        router.register(CardValidate.self) { params, _ in
            cards.validate(number: params.number, expMonth: params.expMonth, expYear: params.expYear, cvc: params.cvc)
        }
    }
}

extension CardValidator {
    /// Refuses `card`, if given, before any request to Stripe: CardInvalid naming the field under
    /// `path`, where the card sits in the method's params (in Stripe's field names, `exp_month`,
    /// with `stripeNames`: a `raw` card).
    func require(_ card: CardInput?, at path: String, stripeNames: Bool = false) throws(RPCError) {
        guard let card else { return }
        do throws(CardRefused) { try require(card) } catch {
            throw error.rpcError(at: path, stripeNames: stripeNames)
        }
    }
}

/// Unless a handler names the card's place (`require(_:at:)`), it is `card`, as in paymentContext.addCard.
extension CardRefused: RPCErrorConvertible {
    public var rpcError: RPCError { rpcError(at: "card") }

    func rpcError(at path: String, stripeNames: Bool = false) -> RPCError {
        let what =
            switch field {
            case .number: "card number"
            case .expMonth: "expiry month"
            case .expYear: "expiry year"
            case .cvc: "CVC"
            }
        let name =
            switch (stripeNames, field) {
            case (true, .expMonth): "exp_month"
            case (true, .expYear): "exp_year"
            default: field.rawValue
            }
        let parameter = "\(path).\(name)"
        return StpdErrors.cardInvalid(
            "the \(what) is \(state.rawValue) (\(parameter))",
            data: [
                "parameter": .string(parameter), "field": .string(field.rawValue), "state": .string(state.rawValue),
                "brand": .string(brand.rawValue),
            ])
    }
}

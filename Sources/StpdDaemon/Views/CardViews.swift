import StpdCore
import StpdProtocol

// What the contract shows of the card rules' verdict (docs/architecture.md: the domain's results
// become the contract's views here, at the edge).

extension CardValidate.Result {
    init(_ validation: CardValidation) {
        self.init(
            brand: validation.brand, number: validation.number, expMonth: validation.expMonth,
            expYear: validation.expYear, cvc: validation.cvc, card: validation.card)
    }
}

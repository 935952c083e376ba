import JSONRPC
import StpdValues

/// `card.*`: the SDK's card validation (`STPCardValidator`), for forms that check as the customer types.
public enum CardValidate: RPCMethod {
    public struct Params: Codable, Sendable {
        public var number: String?
        public var expMonth: String?
        public var expYear: String?
        public var cvc: String?
        public init(number: String? = nil, expMonth: String? = nil, expYear: String? = nil, cvc: String? = nil) {
            self.number = number
            self.expMonth = expMonth
            self.expYear = expYear
            self.cvc = cvc
        }
    }
    public struct Result: Codable, Sendable, Hashable {
        public var brand: CardBrand
        public var number: CardValidationState
        public var expMonth: CardValidationState
        public var expYear: CardValidationState
        public var cvc: CardValidationState
        /// All four together: invalid if one is, else incomplete if one is, else valid.
        public var card: CardValidationState
        public init(
            brand: CardBrand, number: CardValidationState, expMonth: CardValidationState,
            expYear: CardValidationState, cvc: CardValidationState, card: CardValidationState
        ) {
            self.brand = brand
            self.number = number
            self.expMonth = expMonth
            self.expYear = expYear
            self.cvc = cvc
            self.card = card
        }
    }
    public static let name = "card.validate"
    public static let summary =
        "Validates card details as typed, field by field, with the SDK's STPCardValidator rules; the card is not sent to Stripe."
    public static let description: String? = """
        Each field is valid, invalid, or incomplete (a prefix of something valid). number: spaces are \
        ignored, any other non-digit makes it invalid; the brand comes from the SDK's bundled BIN ranges, \
        which also give the length (for a UnionPay number, whose length varies, the ranges Stripe's card \
        metadata answers for its first six digits, as the SDK asks them; the bundled ones when it does \
        not answer); then the Luhn check. expMonth: 1-12, "0" and "1" incomplete. expYear: \
        two digits as an MM/YY field takes them (a four-digit year is compared whole), from this month to \
        50 years ahead, judged with expMonth. cvc: 3 digits, or 4 for amex and unknown brands. An absent \
        field is empty, hence incomplete. source.create, paymentIntent.confirm, setupIntent.confirm and \
        paymentContext.addCard refuse a card that is not valid with CardInvalid before any request.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "number": .string("The card number as typed"),
            "expMonth": .string("The expiry month as typed, e.g. 4 or 04"),
            "expYear": .string("The expiry year as typed, e.g. 31 (or 2031)"),
            "cvc": .string("The card verification code as typed"),
        ])
    public static let resultSchema: JSONSchema = {
        let state = { (field: String) in JSONSchema.cases(of: CardValidationState.self, field) }
        return .object(
            [
                "brand": .cases(
                    of: CardBrand.self, "The brand the number's first digits name (unknown until one does)"),
                "number": state("The number"), "expMonth": state("The expiry month"),
                "expYear": state("The expiry year, with the month"), "cvc": state("The CVC, for the brand"),
                "card": state("The card as a whole: invalid if a field is, else incomplete if a field is"),
            ], required: ["brand", "number", "expMonth", "expYear", "cvc", "card"])
    }()
}

// A card's brand and the state of a typed field: what the domain's card rules decide and the
// contract shows (card.validate, CardInvalid's data) alike (docs/architecture.md).

/// A card network, named as the SDK's `STPCardBrand` cases are, in camelCase.
public enum CardBrand: String, Codable, Sendable, Hashable, CaseIterable {
    case visa, amex, mastercard, discover, jcb, dinersClub, unionPay, cartesBancaires, unknown
}

/// The SDK's `STPCardValidationState`: `incomplete` could still become `valid` as the customer types.
public enum CardValidationState: String, Codable, Sendable, Hashable, CaseIterable {
    case valid, invalid, incomplete
}

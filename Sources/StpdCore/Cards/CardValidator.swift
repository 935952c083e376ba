import Foundation
import StpdValues
import StripeAPI

/// The SDK's card validation, `STPCardValidator` (stripe-ios `StripePayments/Source/Helpers/STPCardValidator.swift`
/// at 2f2bd74, the newest stored), field by field as `STPPaymentCardTextField` judges what is typed.
/// Two differences, on purpose:
/// - a four-digit expiry year is compared whole: the SDK's form takes two digits, and its check of
///   an `STPCardParams` keeps the last two, which would read 1930 as 2030;
/// - brands and lengths come from the bundled BIN ranges (`BINRange`) and, for UnionPay's
///   variable-length prefixes, from Stripe's card metadata when `metadata` answers
///   (`CardMetadataLookup`); the SDK's form waits for that answer, stpd's call does.
///
/// Today's year and month are read from the injected clock in `calendar`'s time zone (the SDK reads
/// the device's; stpd's default calendar is the host's).
public struct CardValidator: Sendable {
    let now: @Sendable () -> Date
    let calendar: Calendar
    /// The card metadata lookup for variable-length prefixes (nil: the bundled ranges only).
    public var metadata: CardMetadataLookup?

    public init(
        now: @escaping @Sendable () -> Date = Date.init, calendar: Calendar = Calendar(identifier: .gregorian),
        metadata: CardMetadataLookup? = nil
    ) {
        self.now = now
        self.calendar = calendar
        self.metadata = metadata
    }

    /// `validate` with the card metadata's ranges for the number's prefix, looked up for `caller`.
    public func validate(
        number: String?, expMonth: String?, expYear: String?, cvc: String?, for caller: Caller
    ) async -> CardValidation {
        let fetched = await metadata?.ranges(for: number ?? "", uid: caller.uid) ?? []
        return validate(number: number, expMonth: expMonth, expYear: expYear, cvc: cvc, fetched: fetched)
    }

    /// Each field as typed; an absent one is empty, hence incomplete, as an empty text field is.
    /// With the bundled ranges only.
    public func validate(number: String?, expMonth: String?, expYear: String?, cvc: String?) -> CardValidation {
        validate(number: number, expMonth: expMonth, expYear: expYear, cvc: cvc, fetched: [])
    }

    func validate(
        number: String?, expMonth: String?, expYear: String?, cvc: String?, fetched: [BINRange]
    ) -> CardValidation {
        let today = calendar.dateComponents([.year, .month], from: now())
        let brand = Self.brand(of: number ?? "", fetched: fetched)
        let states = [
            Self.numberState(number ?? "", fetched: fetched), Self.monthState(expMonth ?? ""),
            Self.yearState(expYear ?? "", month: expMonth ?? "", today: (today.year ?? 0, today.month ?? 0)),
            Self.cvcState(cvc ?? "", brand: brand),
        ]
        let card: CardValidationState =
            states.contains(.invalid) ? .invalid : states.contains(.incomplete) ? .incomplete : .valid
        return .init(
            brand: brand, number: states[0], expMonth: states[1], expYear: states[2], cvc: states[3], card: card)
    }

    /// What the SDK's card forms wait for before they send a card: the first field that is not
    /// valid is refused. The CVC is judged only when given, since Stripe takes a card without one.
    /// With the card metadata's ranges looked up for `caller`.
    public func require(_ card: CardInput, for caller: Caller) async throws(CardRefused) {
        let fetched = await metadata?.ranges(for: card.number, uid: caller.uid) ?? []
        try require(card, fetched: fetched)
    }

    /// With the bundled ranges only.
    public func require(_ card: CardInput) throws(CardRefused) { try require(card, fetched: []) }

    func require(_ card: CardInput, fetched: [BINRange]) throws(CardRefused) {
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        let result = validate(
            number: card.number, expMonth: twoDigits(card.expMonth), expYear: twoDigits(card.expYear), cvc: card.cvc,
            fetched: fetched)
        let fields: [(CardRefused.Field, CardValidationState)] =
            [(.number, result.number), (.expMonth, result.expMonth), (.expYear, result.expYear)]
            + (card.cvc == nil ? [] : [(.cvc, result.cvc)])
        if let (field, state) = fields.first(where: { $0.1 != .valid }) {
            throw CardRefused(field: field, state: state, brand: result.brand)
        }
    }

    // MARK: The SDK's rules, one per field

    /// `validationState(forNumber:validatingCardBrand: true)`: whitespace is dropped, any other
    /// non-digit is invalid; a number no brand issues is invalid; the most specific BIN range gives
    /// the length; a full-length number must pass the Luhn check.
    static func numberState(_ typed: String, fetched: [BINRange] = []) -> CardValidationState {
        let number = removingWhitespace(typed)
        guard !number.isEmpty else { return .incomplete }
        guard isNumeric(number) else { return .invalid }
        let range = BINRange.mostSpecific(for: number, fetched: fetched)
        guard range.brand != .unknown else { return .invalid }
        if number.count < range.length { return .incomplete }
        return number.count == range.length && isLuhnValid(number) ? .valid : .invalid
    }

    /// `brand(forNumber:)`: the one brand whose ranges the number's digits fall in, else unknown.
    static func brand(of typed: String, fetched: [BINRange] = []) -> CardBrand {
        let brands = Set(BINRange.all(matching: digits(of: typed), fetched: fetched).map(\.brand)).subtracting([
            .unknown
        ])
        return brands.count == 1 ? brands.first! : .unknown
    }

    /// `validationState(forExpirationMonth:)`: "0" and "1" may still become 01-09 or 10-12.
    static func monthState(_ typed: String) -> CardValidationState {
        let month = removingWhitespace(typed)
        guard isNumeric(month) else { return .invalid }
        switch month.count {
        case 0: return .incomplete
        case 1: return month == "0" || month == "1" ? .incomplete : .valid
        case 2: return (1...12).contains(Int(month) ?? 0) ? .valid : .invalid
        default: return .invalid
        }
    }

    /// `validationState(forExpirationYear:inMonth:)`: from this month to 50 years ahead. A two-digit
    /// year is in this century, which is the SDK's comparison of the years' last two digits.
    static func yearState(_ year: String, month: String, today: (year: Int, month: Int)) -> CardValidationState {
        guard isNumeric(month), isNumeric(year) else { return .invalid }
        switch year.count {
        case 0, 1:
            return .incomplete
        case 2, 4:
            guard let typed = Int(year), let monthNumber = Int(month), monthState(month) != .invalid else {
                return .invalid
            }
            let full = year.count == 2 ? today.year / 100 * 100 + typed : typed
            if full == today.year { return monthNumber >= today.month ? .valid : .invalid }
            return full > today.year && full - today.year <= 50 ? .valid : .invalid
        default:
            return .invalid
        }
    }

    /// `validationState(forCVC:cardBrand:)`: digits only, at least 3, at most `maxCVCLength`.
    static func cvcState(_ cvc: String, brand: CardBrand) -> CardValidationState {
        guard isNumeric(cvc) else { return .invalid }
        if cvc.count < 3 { return .incomplete }
        return cvc.count <= maxCVCLength(for: brand) ? .valid : .invalid
    }

    /// `maxCVCLength(for:)`: 4 for American Express, and for a brand not known yet.
    static func maxCVCLength(for brand: CardBrand) -> Int { brand == .amex || brand == .unknown ? 4 : 3 }

    static func isLuhnValid(_ digits: String) -> Bool {
        var sum = 0
        for (index, character) in digits.reversed().enumerated() {
            let digit = Int(character.asciiValue ?? 48) - 48
            let weighted = index % 2 == 1 ? digit * 2 : digit
            sum += weighted > 9 ? weighted - 9 : weighted
        }
        return sum % 10 == 0
    }

    /// No character but the ASCII digits (the empty string is numeric), as `stringIsNumeric`.
    static func isNumeric(_ text: String) -> Bool { text.unicodeScalars.allSatisfy(isDigit) }

    /// `sanitizedNumericString(for:)`: the ASCII digits only.
    static func digits(of text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter(isDigit)))
    }

    static func removingWhitespace(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !CharacterSet.whitespaces.contains($0) }))
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
}

/// A card refused before any request: the first of its fields that is not valid, as the card
/// names it, and the brand its number names.
public struct CardRefused: Error, Sendable, Hashable {
    public enum Field: String, Sendable, Hashable {
        case number, expMonth, expYear, cvc
    }

    public var field: Field
    public var state: CardValidationState
    public var brand: CardBrand

    public init(field: Field, state: CardValidationState, brand: CardBrand) {
        self.field = field
        self.state = state
        self.brand = brand
    }
}

/// What the card rules make of typed fields: each field's state, the brand the number names, and
/// the card as a whole (invalid if a field is, else incomplete if a field is, else valid).
public struct CardValidation: Sendable, Hashable {
    public var brand: CardBrand
    public var number: CardValidationState
    public var expMonth: CardValidationState
    public var expYear: CardValidationState
    public var cvc: CardValidationState
    public var card: CardValidationState
}

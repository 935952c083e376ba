import Foundation
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// The cases of the SDK's own tests, ported: `Stripe/StripeiOSTests/STPCardValidatorTest.swift`
/// (stripe-ios at 33336ff, the newest stored) and `STPBinRangeTest.swift`. Left out: the cases of
/// `validatingCardBrand: false` (stpd always validates the brand), the display format
/// (`fragmentLength`) and the card-metadata fetches (`CardMetadataLookupTests`).
@Suite("CardValidator")
struct CardValidatorTests {
    /// STPCardValidatorTest.cardData: (brand, number, state).
    static let cardData: [(CardBrand, String, CardValidationState)] = [
        (.visa, "4242424242424242", .valid), (.visa, "4242424242422", .incomplete),
        (.visa, "4012888888881881", .valid), (.visa, "4000056655665556", .valid),
        (.mastercard, "5555555555554444", .valid), (.mastercard, "5200828282828210", .valid),
        (.mastercard, "5105105105105100", .valid), (.mastercard, "2223000010089800", .valid),
        (.amex, "378282246310005", .valid), (.amex, "371449635398431", .valid),
        (.discover, "6011111111111117", .valid), (.discover, "6011000990139424", .valid),
        (.dinersClub, "36227206271667", .valid), (.dinersClub, "3056930009020004", .valid),
        (.jcb, "3530111333300000", .valid), (.jcb, "3566002020360505", .valid),
        (.unknown, "1234567812345678", .invalid),
    ]

    /// The SDK's tests fix today at August 2015.
    static let august2015 = CardValidator(
        now: { Date(timeIntervalSince1970: 1_439_640_000) },  // 2015-08-15 12:00 UTC
        calendar: {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            return calendar
        }())

    @Test func numberSanitization() {
        let tests = [
            ("4242424242424242", "4242424242424242"), ("XXXXXX", ""), ("424242424242424X", "424242424242424"),
            ("X4242", "4242"), ("4242 4242 4242 4242", "4242424242424242"),
        ]
        for (typed, digits) in tests { #expect(CardValidator.digits(of: typed) == digits) }
    }

    @Test func numberValidation() {
        var tests = Self.cardData.map { ($0.2, $0.1) }
        tests += [(.valid, "4242 4242 4242 4242"), (.valid, "4136000000008")]
        tests += [
            "0000000000000000", "9999999999999995", "1", "1234123412341234", "xxx", "9999999999999999999999",
            "42424242424242424242", "4242-4242-4242-4242",
        ].map { (.invalid, $0) }
        tests += ["4242", "5", "3", "", "    ", "6011", "4012888888881", "4242424242424"].map { (.incomplete, $0) }
        for (expected, number) in tests {
            #expect(CardValidator.numberState(number) == expected, "\(number)")
        }
        #expect(Self.august2015.validate(number: nil, expMonth: nil, expYear: nil, cvc: nil).number == .incomplete)
    }

    @Test func brand() {
        for (brand, number, _) in Self.cardData { #expect(CardValidator.brand(of: number) == brand, "\(number)") }
    }

    @Test func lengthsForCardBrand() {
        let tests: [(CardBrand, Set<Int>)] = [
            (.visa, [13, 16]), (.mastercard, [16]), (.amex, [15]), (.discover, [16]), (.dinersClub, [14, 16]),
            (.jcb, [16]), (.unionPay, [16, 19]), (.unknown, [19]), (.cartesBancaires, []),
        ]
        for (brand, lengths) in tests {
            #expect(Set(BINRange.bundled.filter { $0.brand == brand }.map(\.length)) == lengths, "\(brand)")
        }
    }

    @Test func monthValidation() {
        let tests: [(String, CardValidationState)] = [
            ("", .incomplete), ("0", .incomplete), ("1", .incomplete), ("2", .valid), ("9", .valid), ("10", .valid),
            ("12", .valid), ("13", .invalid), ("11a", .invalid), ("x", .invalid), ("100", .invalid), ("00", .invalid),
        ]
        for (month, expected) in tests { #expect(CardValidator.monthState(month) == expected, "\(month)") }
    }

    @Test func yearValidation() {
        // (month, year, state) in August 2015. The SDK's test still expects 2099 to be valid
        // ("11"/"01"/"1" with "99"); its validator has since capped expiry at 50 years ahead, and
        // the validator is the reference, so those three are invalid here, and 2065 is the last valid year.
        let tests: [(String, String, CardValidationState)] = [
            ("12", "15", .valid), ("8", "15", .valid), ("9", "15", .valid), ("11", "16", .valid),
            ("11", "99", .invalid), ("01", "99", .invalid), ("1", "99", .invalid), ("12", "65", .valid),
            ("12", "66", .invalid), ("00", "99", .invalid), ("12", "14", .invalid), ("7", "15", .invalid),
            ("12", "00", .invalid), ("13", "16", .invalid), ("12", "2", .incomplete), ("12", "1", .incomplete),
            ("12", "0", .incomplete),
            // stpd's four-digit years, compared whole.
            ("12", "2016", .valid), ("7", "2015", .invalid), ("12", "1916", .invalid), ("12", "2116", .invalid),
            ("12", "201", .invalid),
        ]
        for (month, year, expected) in tests {
            #expect(CardValidator.yearState(year, month: month, today: (2015, 8)) == expected, "\(month)/\(year)")
        }
    }

    @Test func cvcLength() {
        let tests: [(CardBrand, Int)] = [
            (.visa, 3), (.mastercard, 3), (.amex, 4), (.discover, 3), (.dinersClub, 3), (.jcb, 3), (.unionPay, 3),
            (.unknown, 4), (.cartesBancaires, 3),
        ]
        for (brand, length) in tests { #expect(CardValidator.maxCVCLength(for: brand) == length, "\(brand)") }
    }

    @Test func cvcValidation() {
        let tests: [(String, CardBrand, CardValidationState)] = [
            ("x", .visa, .invalid), ("", .visa, .incomplete), ("1", .visa, .incomplete), ("12", .visa, .incomplete),
            ("1x3", .visa, .invalid), ("123", .visa, .valid), ("123", .amex, .valid), ("123", .unknown, .valid),
            ("1234", .visa, .invalid), ("1234", .amex, .valid), ("12345", .amex, .invalid),
        ]
        for (cvc, brand, expected) in tests {
            #expect(CardValidator.cvcState(cvc, brand: brand) == expected, "\(cvc) \(brand)")
        }
    }

    /// `testCardValidation`: the SDK formats STPCardParams' month and year as two digits.
    @Test func cardValidation() {
        let tests: [(String, String, String, String, CardValidationState)] = [
            ("4242424242424242", "12", "15", "123", .valid), ("4242424242424242", "12", "15", "x", .invalid),
            ("4242424242424242", "12", "15", "1", .incomplete), ("4242424242424242", "12", "14", "123", .invalid),
            ("4242424242424242", "21", "15", "123", .invalid), ("42424242", "12", "15", "123", .incomplete),
            ("378282246310005", "12", "15", "1234", .valid), ("378282246310005", "12", "15", "123", .valid),
            ("378282246310005", "12", "15", "12345", .invalid), ("1234567812345678", "12", "15", "12345", .invalid),
        ]
        for (number, month, year, cvc, expected) in tests {
            let result = Self.august2015.validate(number: number, expMonth: month, expYear: year, cvc: cvc)
            #expect(result.card == expected, "\(number) \(month)/\(year) \(cvc)")
        }
    }

    @Test func theResultNamesEachFieldAndTheBrand() {
        let result = Self.august2015.validate(number: "3782 822463 10005", expMonth: "8", expYear: "15", cvc: "12")
        #expect(
            result
                == .init(
                    brand: .amex, number: .valid, expMonth: .valid, expYear: .valid, cvc: .incomplete, card: .incomplete
                ))
    }

    @Test func aCardIsRefusedAtItsFirstFieldThatIsNotValid() throws {
        let validator = Self.august2015
        func refusal(_ card: CardInput) -> CardRefused? {
            do throws(CardRefused) {
                try validator.require(card)
                return nil
            } catch { return error }
        }
        #expect(refusal(CardInput(number: "4242424242424242", expMonth: 8, expYear: 2015, cvc: "123")) == nil)
        #expect(refusal(CardInput(number: "4242 4242 4242 4242", expMonth: 1, expYear: 30)) == nil)
        #expect(
            refusal(CardInput(number: "4242424242424241", expMonth: 8, expYear: 2030))
                == CardRefused(field: .number, state: .invalid, brand: .visa))
        #expect(
            refusal(CardInput(number: "424242424242", expMonth: 8, expYear: 2030))
                == CardRefused(field: .number, state: .incomplete, brand: .visa))
        #expect(
            refusal(CardInput(number: "5555555555554444", expMonth: 7, expYear: 2015))
                == CardRefused(field: .expYear, state: .invalid, brand: .mastercard))
        #expect(
            refusal(CardInput(number: "378282246310005", expMonth: 8, expYear: 2030, cvc: "12345"))
                == CardRefused(field: .cvc, state: .invalid, brand: .amex))
    }

    // MARK: STPBinRangeTest

    @Test func everyBundledRangeHasBoundsOfOneLength() {
        for range in BINRange.bundled { #expect(range.low.count == range.high.count) }
    }

    @Test func matchesNumber() {
        let range = BINRange(low: "134", high: "167", length: 0, brand: .unknown)
        let matching = ["1", "13", "14", "16", "134", "135", "167", "1340", "1344", "1444", "1670", "1679"]
        let notMatching = ["0", "2", "00", "20", "133", "168", "1244", "1680"]
        for number in matching { #expect(range.matches(number), "\(number)") }
        for number in notMatching { #expect(!range.matches(number), "\(number)") }

        let leadingZeros = BINRange(low: "004", high: "017", length: 0, brand: .unknown)
        let zeroMatching = ["0", "00", "01", "004", "009", "014", "017", "0044", "0098", "0143", "0173"]
        let zeroNotMatching = [
            "1", "10", "20", "000", "002", "019", "020", "100", "0000", "0021", "0195", "0202", "1004",
        ]
        for number in zeroMatching { #expect(leadingZeros.matches(number), "\(number)") }
        for number in zeroNotMatching { #expect(!leadingZeros.matches(number), "\(number)") }

        let empty = BINRange(low: "", high: "", length: 0, brand: .unknown)
        #expect(empty.matches("") && empty.matches("1"))
    }

    @Test func binRangesForNumber() {
        #expect(BINRange.all(matching: "4136000000008").count == 3)
        #expect(BINRange.all(matching: "4242424242424242").count == 2)
        #expect(BINRange.all(matching: "5555555555554444").count == 2)
        #expect(BINRange.all(matching: "").count == BINRange.bundled.count)
        #expect(BINRange.all(matching: "123").count == 1)
    }

    @Test func mostSpecificBINRangeForNumber() {
        #expect(BINRange.mostSpecific(for: "").brand != .unknown)
        #expect(BINRange.mostSpecific(for: "4242424242422").brand == .visa)
        #expect(BINRange.mostSpecific(for: "4242424242422").length == 16)
        #expect(BINRange.mostSpecific(for: "4136000000008").length == 13)
        #expect(BINRange.mostSpecific(for: "4242424242424242").length == 16)
        #expect(BINRange.mostSpecific(for: "6215980000000000004").length == 19)
    }
}

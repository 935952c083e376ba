import StpdProtocol
import Testing

@testable import StpdCore

/// The SDK's address-form checks, with the cases of its own `STPPostalCodeValidatorTest` first.
@Suite struct AddressFieldsTests {
    @Test func usPostalCodesAsStripeIOS23sPostalCodeValidatorJudgesThem() {
        for code in ["10002", "10002-1234", "100021234", "21218", "12345 6789", "12345.6789"] {
            #expect(AddressFields.postalCodeState(code, country: "US") == .valid, "\(code)")
        }
        for code in ["100A03", "12345-12345", "1234512345", "$$$$$", "foo", "12345--678", "123456-789"] {
            #expect(AddressFields.postalCodeState(code, country: "US") == .invalid, "\(code)")
        }
        for code in ["", "123", "12345-", "12345-12", "123456"] {
            #expect(AddressFields.postalCodeState(code, country: "us") == .incomplete, "\(code)")
        }
    }

    @Test func elsewhereAnyTextUnlessTheCountryHasNoPostalCodes() {
        for code in ["ABC10002", "10002-ABCD", "ABCDE", " "] {
            #expect(AddressFields.postalCodeState(code, country: "UK") == .valid)
        }
        #expect(AddressFields.postalCodeState("", country: "UK") == .incomplete)
        #expect(AddressFields.postalCodeState("", country: nil) == .incomplete)
        #expect(AddressFields.postalCodeState("x", country: nil) == .valid)
        for country in ["JP", "jp", "IE", "HK", "AE"] {
            #expect(AddressFields.postalCodeState("", country: country) == .valid, "\(country)")
        }
    }

    @Test func aPhoneNumberHasItsCountrysDigitsAsInStripeIOS23() {
        #expect(AddressFields.isPhoneNumber("(555) 555-5555", country: "US"))
        #expect(AddressFields.isPhoneNumber("+1 555 555 5555", country: "US"))
        #expect(!AddressFields.isPhoneNumber("555-5555", country: "US"))
        #expect(AddressFields.isPhoneNumber("030 1234567", country: "DE"))
        #expect(!AddressFields.isPhoneNumber("030 12345", country: "DE"))
        #expect(AddressFields.isPhoneNumber("11 91234-5678", country: "BR"))
        // A country without a pattern, or none at all: any text.
        #expect(AddressFields.isPhoneNumber("12", country: "XX"))
        #expect(AddressFields.isPhoneNumber("12", country: nil))
        #expect(!AddressFields.isPhoneNumber("", country: nil))
        #expect(AddressFields.phoneDigits.count == 239)
    }

    @Test func anEmailAddressMatchesStripeIOS23sPattern() {
        for good in ["jenny@example.com", "Jenny.Rosen+shop@mail.example.co.uk", "a@b.cd"] {
            #expect(AddressFields.isEmailAddress(good), "\(good)")
        }
        for bad in ["", "jenny", "jenny@", "@example.com", "jenny@example", "jenny rosen@example.com", "a@b..cd"] {
            #expect(!AddressFields.isEmailAddress(bad), "\(bad)")
        }
    }
}

import Foundation
import StpdValues

/// How the SDK's address forms judge a postal code, a phone number and an email address before they
/// submit (stripe-ios, the newest stored sources: `STPPostalCodeValidator` at 2b38217,
/// `STPPhoneNumberValidator` with StripeUICore's `PhoneNumber` at ddfabb9, `STPEmailAddressValidator`
/// at 0032a69). Where the SDK falls back on the device's region (a phone number without a country),
/// stpd judges the number as one of a country it has no rule for: a daemon's locale is its host's,
/// not the customer's.
public enum AddressFields {
    /// `STPPostalCodeValidator.validationState(forPostalCode:countryCode:)`: a country without postal
    /// codes takes anything; the US a ZIP or ZIP+4 (`12345`, `123456789`, or one separator of any
    /// kind at the sixth place: `12345-6789`, `12345 6789`); anywhere else, or with no country, any
    /// text at all.
    public static func postalCodeState(_ code: String, country: String?) -> CardValidationState {
        let country = country?.uppercased()
        if let country, countriesWithNoPostalCodes.contains(country) { return .valid }
        guard country == "US" else { return code.isEmpty ? .incomplete : .valid }
        let characters = Array(code)
        let firstFive = characters.prefix(5)
        guard firstFive.allSatisfy(\.isASCIIDigit) else { return .invalid }
        if firstFive.count < 5 { return .incomplete }
        if characters.count == 5 { return .valid }
        let digits = characters.filter(\.isASCIIDigit).count
        if digits > 9 { return .invalid }
        if digits == characters.count { return digits == 9 ? .valid : .incomplete }
        guard digits + 1 == characters.count, !characters[5].isASCIIDigit else { return .invalid }
        return digits == 9 ? .valid : .incomplete
    }

    /// `STPPhoneNumberValidator.stringIsValidPhoneNumber(_:forCountryCode:)`: complete when it has as
    /// many digits as the country's pattern (`PhoneNumber.Metadata`: US `(###) ###-####`, 10); for a
    /// country without a pattern, any text.
    public static func isPhoneNumber(_ text: String, country: String?) -> Bool {
        guard let country, let digits = phoneDigits[country] else { return !text.isEmpty }
        return text.filter(\.isASCIIDigit).count >= digits
    }

    /// `STPEmailAddressValidator.stringIsValidEmailAddress`: the whole text, lower-cased, matches
    /// regular-expressions.info's address pattern.
    public static func isEmailAddress(_ text: String) -> Bool {
        (try? emailPattern.wholeMatch(in: text.lowercased())) != nil
    }

    nonisolated(unsafe) private static let emailPattern = try! Regex(
        #"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+"#
            + #"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"#)

    /// `countriesWithNoPostalCodes`, JP among them since 22.6.0.
    static let countriesWithNoPostalCodes: Set<String> = [
        "AE", "AG", "AN", "AO", "AW", "BF", "BI", "BJ", "BO", "BS", "BW", "BZ", "CD", "CF", "CG", "CI", "CK", "CM",
        "DJ", "DM", "ER", "FJ", "GD", "GH", "GM", "GN", "GQ", "GY", "HK", "IE", "JM", "JP", "KE", "KI", "KM", "KN",
        "KP", "LC", "ML", "MO", "MR", "MS", "MU", "MW", "NR", "NU", "PA", "QA", "RW", "SB", "SC", "SL", "SO", "SR",
        "ST", "SY", "TF", "TK", "TL", "TO", "TT", "TV", "TZ", "UG", "VU", "YE", "ZA", "ZW",
    ]

    /// The digits each country's `PhoneNumber.Metadata` pattern holds (its `#`s).
    static let phoneDigits: [String: Int] = {
        let byCount: [Int: [String]] = [
            0: ["AC AX BV FK GS KI KZ MF NU PN RE SH TA TF TK TV VA WS"],
            5: ["CK"],
            6: ["AD AQ FO GL PF PM WF"],
            7: ["AW BN BQ BZ CV ER FJ GM GW GY IO IS KM MV NR PG SB SC SR ST TO VU"],
            8: [
                "AM BA BF BG BH BI BJ BO BT BW CF CI CM CR CW CY DJ DK EE GA GI GT HK HN HT KH KW LB",
                "LS LT LV MD ME MK ML MM MN MO MR MT MU NC NE NI NO OM PA QA SG SI SJ SL SM SV SZ TD",
                "TG TL TM TN UY XK",
            ],
            9: [
                "AE AF AL AO AT AU AZ BE BL BY CD CG CH CL CZ DZ EC EH ES ET FI FR GE GF GH GN GP GQ",
                "HR HU ID IE IL JO KE KG LI LK LR LU LY MA MC MG MQ MW MY MZ NA NL NZ PE PL PS PT PY",
                "RO RS RW SA SE SK SN SO SS TH TJ TW TZ UA UG UZ VN YE YT ZA ZM ZW",
            ],
            10: [
                "AG AI AS BB BD BM BS CA CO DE DM DO EG GB GD GG GR GU IM IN IQ IT JE JM JP KN KR KY",
                "LA LC MP MS MX NG NP PH PK PR RU SX TC TR TT US VC VE VG VI",
            ],
            11: ["BR CN"],
            12: ["AR"],
        ]
        return Dictionary(
            uniqueKeysWithValues: byCount.flatMap { digits, lines in
                lines.flatMap { $0.split(separator: " ") }.map { (String($0), digits) }
            })
    }()
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

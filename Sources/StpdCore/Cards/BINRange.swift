import StpdValues

/// A range of card numbers by their leading digits (the issuer identification number) and the
/// length of the numbers in it: the SDK's `STPBINRange`, with the ranges it bundles
/// (`STPBINController.STPBINRangeInitialRanges`, stripe-ios `StripePayments/Source/Helpers/STPBINController.swift`
/// at 4079712, the newest stored; its duplicate 444509 row is left out).
///
/// The SDK adds ranges it fetches from Stripe's internal card-metadata service for UnionPay
/// prefixes (variable lengths) and for card brand choice (Cartes Bancaires). stpd fetches them for
/// UnionPay's prefixes (`CardMetadataLookup`); without an answer a UnionPay number is 16 digits
/// (19 for 621598), as the SDK's is until its fetch answers. `cartesBancaires` is never detected
/// (a co-branded card reads as its Visa or Mastercard brand).
struct BINRange: Sendable, Hashable {
    var low: String
    var high: String
    var length: Int
    var brand: CardBrand

    /// The SDK's rule: cut the longer of the number and the bound to the shorter one's length,
    /// then compare as numbers (the empty range matches every number).
    func matches(_ digits: String) -> Bool {
        func cut(_ text: String, to bound: String) -> Int { Int(text.prefix(min(digits.count, bound.count))) ?? 0 }
        return cut(digits, to: low) >= cut(low, to: low) && cut(digits, to: high) <= cut(high, to: high)
    }

    /// Every range that `digits` (or a number starting with them) may fall in; `fetched` are the
    /// card metadata's ranges for its prefix (`CardMetadataLookup`), after the bundled ones as the
    /// SDK appends them.
    static func all(matching digits: String, fetched: [BINRange] = []) -> [BINRange] {
        (bundled + fetched).filter { $0.matches(digits) }
    }

    /// The SDK's `mostSpecificBINRange`: the matching range with the longest bound; a named brand
    /// over `unknown` at equal length, and the later row among equals (the SDK's stable sort, last).
    static func mostSpecific(for digits: String, fetched: [BINRange] = []) -> BINRange {
        let ranked = (bundled + fetched).enumerated().filter { $0.element.matches(digits) }.max { a, b in
            (a.element.low.count, a.element.brand != .unknown ? 1 : 0, a.offset)
                < (b.element.low.count, b.element.brand != .unknown ? 1 : 0, b.offset)
        }
        return ranked?.element ?? bundled[0]
    }

    static let bundled: [BINRange] = {
        let rows: [(String, String, Int, CardBrand)] = [
            ("", "", 19, .unknown),
            ("34", "34", 15, .amex), ("37", "37", 15, .amex),
            ("30", "30", 16, .dinersClub), ("36", "36", 14, .dinersClub), ("38", "39", 16, .dinersClub),
            ("60", "60", 16, .discover), ("64", "65", 16, .discover),
            ("35", "35", 16, .jcb),
            ("50", "59", 16, .mastercard), ("22", "27", 16, .mastercard), ("67", "67", 16, .mastercard),  // 67: Maestro
            ("62", "62", 16, .unionPay), ("81", "81", 16, .unionPay),
            // The SDK's one known 19-digit BIN, so that UnionPay's longest length is known.
            ("621598", "621598", 19, .unionPay),
            ("40", "49", 16, .visa),
            // 13-digit Visa BINs.
            ("413600", "413600", 13, .visa), ("444509", "444509", 13, .visa), ("444550", "444550", 13, .visa),
            ("450603", "450603", 13, .visa), ("450617", "450617", 13, .visa), ("450628", "450629", 13, .visa),
            ("450636", "450636", 13, .visa), ("450640", "450641", 13, .visa), ("450662", "450662", 13, .visa),
            ("463100", "463100", 13, .visa), ("476142", "476142", 13, .visa), ("476143", "476143", 13, .visa),
            ("492901", "492902", 13, .visa), ("492920", "492920", 13, .visa), ("492923", "492923", 13, .visa),
            ("492928", "492930", 13, .visa), ("492937", "492937", 13, .visa), ("492939", "492939", 13, .visa),
            ("492960", "492960", 13, .visa),
        ]
        return rows.map { BINRange(low: $0.0, high: $0.1, length: $0.2, brand: $0.3) }
    }()
}

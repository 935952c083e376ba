import Foundation
import JSONRPC

/// Stripe's documented test card numbers and what this server does with them.
struct TestCard: Sendable {
    struct Decline: Sendable {
        var code: String
        var declineCode: String?
        var message: String
    }

    var number: String
    var brand: String  // PaymentMethod spelling: visa, mastercard, amex, discover, diners, jcb, unionpay, unknown
    var funding: String
    var country: String
    var decline: Decline?
    var requiresAuthentication: Bool

    var last4: String { String(number.suffix(4)) }
    /// The legacy Source/Token spelling of the brand ("Visa", "MasterCard", "American Express").
    var sourceBrand: String {
        switch brand {
        case "visa": return "Visa"
        case "mastercard": return "MasterCard"
        case "amex": return "American Express"
        case "discover": return "Discover"
        case "diners": return "Diners Club"
        case "jcb": return "JCB"
        case "unionpay": return "UnionPay"
        default: return "Unknown"
        }
    }
    var fingerprint: String {
        var h: UInt64 = 1_469_598_103_934_665_603
        for b in number.utf8 { h = (h ^ UInt64(b)) &* 1_099_511_628_211 }
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var out = ""
        for _ in 0..<16 {
            out.append(alphabet[Int(h % 62)])
            h /= 62
            if h == 0 { h = 0x9E37_79B9_7F4A_7C15 }
        }
        return out
    }

    static let declines: [String: Decline] = [
        "4000000000000002": .init(
            code: "card_declined", declineCode: "generic_decline", message: "Your card was declined."),
        "4000000000009995": .init(
            code: "card_declined", declineCode: "insufficient_funds", message: "Your card has insufficient funds."),
        "4000000000009987": .init(code: "card_declined", declineCode: "lost_card", message: "Your card was declined."),
        "4000000000009979": .init(
            code: "card_declined", declineCode: "stolen_card", message: "Your card was declined."),
        "4000000000000069": .init(code: "expired_card", declineCode: "expired_card", message: "Your card has expired."),
        "4000000000000127": .init(
            code: "incorrect_cvc", declineCode: "incorrect_cvc", message: "Your card's security code is incorrect."),
        "4000000000000119": .init(
            code: "processing_error", declineCode: "processing_error",
            message: "An error occurred while processing your card. Try again in a little bit."),
    ]

    static let authenticationRequired: Set<String> = [
        "4000000000003220", "4000002500003155", "4000002760003184", "4000000000003063", "4000008260003178",
    ]

    /// `pm_card_visa`-style shortcuts (and `tok_visa`) → card numbers.
    static let shortcuts: [String: String] = [
        "visa": "4242424242424242",
        "visa_debit": "4000056655665556",
        "mastercard": "5555555555554444",
        "mastercard_debit": "5200828282828210",
        "amex": "378282246310005",
        "discover": "6011111111111117",
        "diners": "3056930009020004",
        "jcb": "3566002020360505",
        "unionpay": "6200000000000005",
        "chargeDeclined": "4000000000000002",
        "chargeDeclinedInsufficientFunds": "4000000000009995",
        "visa_chargeDeclinedInsufficientFunds": "4000000000009995",
        "chargeDeclinedLostCard": "4000000000009987",
        "chargeDeclinedStolenCard": "4000000000009979",
        "chargeDeclinedExpiredCard": "4000000000000069",
        "chargeDeclinedIncorrectCvc": "4000000000000127",
        "chargeDeclinedProcessingError": "4000000000000119",
        "threeDSecure2Required": "4000000000003220",
        "threeDSecureRequired": "4000000000003063",
        "authenticationRequired": "4000002500003155",
        "authenticationRequiredOnSetup": "4000002500003155",
    ]

    static func shortcut(_ id: String) -> String? {
        for prefix in ["pm_card_", "tok_", "src_card_"] where id.hasPrefix(prefix) {
            return shortcuts[String(id.dropFirst(prefix.count))]
        }
        return nil
    }

    static func luhnValid(_ number: String) -> Bool {
        let digits = number.compactMap { $0.wholeNumberValue }
        guard digits.count == number.count, (12...19).contains(digits.count) else { return false }
        var sum = 0
        for (i, d) in digits.reversed().enumerated() {
            if i % 2 == 1 {
                let x = d * 2
                sum += x > 9 ? x - 9 : x
            } else {
                sum += d
            }
        }
        return sum % 10 == 0
    }

    init(number raw: String) {
        let number = raw.filter { $0 != " " && $0 != "-" }
        self.number = number
        func has(_ prefixes: String...) -> Bool { prefixes.contains { number.hasPrefix($0) } }
        if has("4") {
            brand = "visa"
        } else if has("51", "52", "53", "54", "55", "22", "23", "24", "25", "26", "27") {
            brand = "mastercard"
        } else if has("34", "37") {
            brand = "amex"
        } else if has("6011", "65", "644", "645", "646", "647", "648", "649") {
            brand = "discover"
        } else if has("300", "301", "302", "303", "304", "305", "36", "38") {
            brand = "diners"
        } else if has("35") {
            brand = "jcb"
        } else if has("62", "81") {
            brand = "unionpay"
        } else {
            brand = "unknown"
        }
        funding = ["4000056655665556", "5200828282828210"].contains(number) ? "debit" : "credit"
        country = "US"
        decline = Self.declines[number]
        requiresAuthentication = Self.authenticationRequired.contains(number)
    }
}

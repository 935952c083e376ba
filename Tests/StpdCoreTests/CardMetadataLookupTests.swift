import Foundation
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// The card metadata lookup for UnionPay's variable-length prefixes: what it asks, what it keeps,
/// and that without an answer the bundled ranges judge as before.
@Suite("CardMetadataLookup")
struct CardMetadataLookupTests {
    /// A service that answers from a table (or fails) and counts what it was asked.
    final class Service: CardMetadataSource, @unchecked Sendable {
        private let lock = NSLock()
        private var asked: [String] = []
        let answers: [String: [CardMetadataRange]]
        let fails: Bool

        init(answers: [String: [CardMetadataRange]] = Service.testMode, fails: Bool = false) {
            self.answers = answers
            self.fails = fails
        }

        static let unionPay19 = CardMetadataRange(
            low: "6205500000000000000", high: "6205509999999999999", panLength: 19, brand: .unionPay)
        static let testMode = ["620550": [unionPay19]]

        var prefixes: [String] { lock.withLock { asked } }

        func ranges(binPrefix: String) async throws -> [CardMetadataRange] {
            lock.withLock { asked.append(binPrefix) }
            if fails { throw URLError(.notConnectedToInternet) }
            return answers[binPrefix] ?? []
        }
    }

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var time = Date(timeIntervalSince1970: 1_800_000_000)
        var now: Date { lock.withLock { time } }
        func advance(_ seconds: TimeInterval) { lock.withLock { time += seconds } }
    }

    static let card19 = "6205500000000000004"
    static let user = Caller(uid: 1000)

    static func validator(_ service: Service?, limits: CardMetadataLookup.Limits = .init(), clock: Clock = Clock())
        -> CardValidator
    {
        CardValidator(
            metadata: CardMetadataLookup(source: service, limits: limits, now: { clock.now }))
    }

    @Test func theNineteenDigitTestCardIsValidOnceTheMetadataAnswers() async throws {
        let service = Service()
        let cards = Self.validator(service)
        let result = await cards.validate(
            number: Self.card19, expMonth: "12", expYear: "40", cvc: "123", for: Self.user)
        #expect(result.number == .valid && result.brand == .unionPay && result.card == .valid)
        #expect(service.prefixes == ["620550"])
        // Sixteen digits of it are now incomplete, as the SDK's form reads them once it knows.
        let short = await cards.validate(
            number: String(Self.card19.prefix(16)), expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        #expect(short.number == .incomplete)
        try await cards.require(
            CardInput(number: Self.card19, expMonth: 12, expYear: 2040, cvc: "123"), for: Self.user)
        #expect(service.prefixes == ["620550"])  // cached: asked once
    }

    @Test func withoutAnAnswerTheBundledRangeJudges() async {
        for cards in [Self.validator(Service(fails: true)), Self.validator(nil), CardValidator()] {
            let result = await cards.validate(
                number: Self.card19, expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
            #expect(result.number == .invalid && result.brand == .unionPay)
            let sixteen = await cards.validate(
                number: "6200000000000005", expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
            #expect(sixteen.number == .valid)
        }
    }

    @Test func anEmptyAnswerLeavesTheBundledRange() async {
        let service = Service()
        let cards = Self.validator(service)
        let result = await cards.validate(
            number: "6200000000000005", expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        #expect(result.number == .valid)
        #expect(service.prefixes == ["620000"])
    }

    @Test func onlyVariableLengthPrefixesOfSixDigitsAreLookedUp() async {
        let service = Service()
        let cards = Self.validator(service)
        for number in ["4242424242424242", "5555555555554444", "62055", "6", "", "abc", "378282246310005"] {
            _ = await cards.validate(number: number, expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        }
        #expect(service.prefixes.isEmpty)
        _ = await cards.validate(number: "8100 0000 0000 0000", expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        #expect(service.prefixes == ["810000"])
    }

    @Test func failuresAreNotCachedAndTheCapIsPerUidAndMinute() async {
        let service = Service(fails: true)
        let clock = Clock()
        let cards = Self.validator(service, limits: .init(lookupsPerMinute: 2), clock: clock)
        for _ in 0..<5 {
            _ = await cards.validate(number: Self.card19, expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        }
        #expect(service.prefixes.count == 2)
        _ = await cards.validate(number: Self.card19, expMonth: nil, expYear: nil, cvc: nil, for: Caller(uid: 1001))
        #expect(service.prefixes.count == 3)
        clock.advance(60)
        _ = await cards.validate(number: Self.card19, expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        #expect(service.prefixes.count == 4)
    }

    @Test func theCacheIsBoundedInEntries() async {
        let service = Service()
        let cards = Self.validator(service, limits: .init(maxEntries: 2))
        for prefix in ["620550", "620000", "620001", "620550"] {
            _ = await cards.validate(
                number: prefix + "0000000000", expMonth: nil, expYear: nil, cvc: nil, for: Self.user)
        }
        // 620550 was dropped as the oldest when 620001 came, so it is asked again.
        #expect(service.prefixes == ["620550", "620000", "620001", "620550"])
    }

    @Test func rangesThatCannotJudgeThePrefixAreLeftOut() {
        let foreign = CardMetadataRange(low: "4242420000000000", high: "4242429999999999", panLength: 16, brand: .visa)
        let tooLong = CardMetadataRange(
            low: "6205500000000000000", high: "6205509999999999999", panLength: 25, brand: .unionPay)
        let letters = CardMetadataRange(low: "620550abc", high: "620550zzz", panLength: 19, brand: .unionPay)
        let kept = CardMetadataLookup.accepted([foreign, tooLong, letters, Service.unionPay19], prefix: "620550")
        #expect(kept?.map(\.length) == [19])
        #expect(CardMetadataLookup.accepted(nil, prefix: "620550") == nil)
        let flood = Array(repeating: Service.unionPay19, count: CardMetadataLookup.maxRangesPerAnswer + 1)
        #expect(CardMetadataLookup.accepted(flood, prefix: "620550") == nil)
    }
}

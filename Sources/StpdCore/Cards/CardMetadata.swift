import Foundation
import StpdValues

/// Where the ranges for a BIN prefix come from: Stripe's card metadata service
/// (`GET /edge-internal/card-metadata?key=pk_…&bin_prefix=NNNNNN`, the SDK's `STPBINRange.retrieve`).
public protocol CardMetadataSource: Sendable {
    func ranges(binPrefix: String) async throws -> [CardMetadataRange]
}

/// One account range the service answers: its bounds (full card numbers), the length of the
/// numbers in it and its brand.
public struct CardMetadataRange: Sendable, Hashable {
    public var low: String
    public var high: String
    public var panLength: Int
    public var brand: CardBrand

    public init(low: String, high: String, panLength: Int, brand: CardBrand) {
        self.low = low
        self.high = high
        self.panLength = panLength
        self.brand = brand
    }
}

/// The SDK's `STPBINController.retrieveBINRanges(forPrefix:)` for variable-length prefixes: a number
/// whose first five digits name UnionPay, once it has six digits, has its ranges looked up by those
/// six, and the answer is added to the bundled ranges. A lookup that fails, is refused by the
/// per-uid cap, or has no source (no publishable key) adds nothing: the bundled range judges, as
/// the SDK's does while no answer has come.
///
/// Answers are cached per prefix (at most `maxEntries`, the oldest dropped first); failures are
/// not, so a later call tries again. Lookups not answered from the cache are capped per uid
/// (`lookupsPerMinute`), so one local user cannot make stpd ask Stripe for every prefix.
public actor CardMetadataLookup {
    public struct Limits: Sendable, Hashable {
        public var maxEntries: Int
        public var lookupsPerMinute: Int

        public init(maxEntries: Int = 1024, lookupsPerMinute: Int = 30) {
            self.maxEntries = maxEntries
            self.lookupsPerMinute = lookupsPerMinute
        }
    }

    /// The SDK's `kPrefixLengthForMetadataRequest`.
    static let prefixLength = 6
    /// What one answer may hold: more would be a broken service, not a card.
    static let maxRangesPerAnswer = 64

    let source: (any CardMetadataSource)?
    let limits: Limits
    let now: @Sendable () -> Date
    private var cache: [String: [BINRange]] = [:]
    private var order: [String] = []
    private var inFlight: [String: Task<[BINRange]?, Never>] = [:]
    private var windows: [UInt32: (start: Date, count: Int)] = [:]

    public init(
        source: (any CardMetadataSource)?, limits: Limits = Limits(), now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.source = source
        self.limits = limits
        self.now = now
    }

    /// The ranges to add for `number` (as typed) when `uid` asks: none unless its prefix is
    /// variable-length and the lookup answers.
    func ranges(for number: String, uid: UInt32) async -> [BINRange] {
        let digits = CardValidator.digits(of: number)
        guard let source, digits.count >= Self.prefixLength, Self.isVariableLength(digits) else { return [] }
        let prefix = String(digits.prefix(Self.prefixLength))
        if let cached = cache[prefix] { return cached }
        let task: Task<[BINRange]?, Never>
        if let running = inFlight[prefix] {
            task = running
        } else {
            guard admit(uid) else { return [] }
            task = Task { Self.accepted(try? await source.ranges(binPrefix: prefix), prefix: prefix) }
            inFlight[prefix] = task
        }
        let answer = await task.value
        if inFlight[prefix] == task {
            inFlight[prefix] = nil
            if let answer { store(answer, for: prefix) }
        }
        return answer ?? []
    }

    /// The SDK's `isVariableLengthBINPrefix`: the first five digits' most specific bundled range is UnionPay's.
    static func isVariableLength(_ digits: String) -> Bool {
        BINRange.mostSpecific(for: String(digits.prefix(prefixLength - 1))).brand == .unionPay
    }

    /// The answer's ranges that can judge a number with this prefix: numeric bounds that start
    /// with it, a length the SDK allows (at most 19), bounds no longer than a card number (so the
    /// cache holds at most maxEntries x maxRangesPerAnswer short strings). An answer with none of
    /// them is still an answer.
    static func accepted(_ answer: [CardMetadataRange]?, prefix: String) -> [BINRange]? {
        guard let answer, answer.count <= maxRangesPerAnswer else { return nil }
        return answer.compactMap { range in
            guard CardValidator.isNumeric(range.low), CardValidator.isNumeric(range.high),
                (prefix.count...19).contains(range.low.count), (prefix.count...19).contains(range.high.count),
                range.low.hasPrefix(prefix) || range.high.hasPrefix(prefix), (1...19).contains(range.panLength)
            else { return nil }
            return BINRange(low: range.low, high: range.high, length: range.panLength, brand: range.brand)
        }
    }

    private func store(_ ranges: [BINRange], for prefix: String) {
        if cache.updateValue(ranges, forKey: prefix) == nil { order.append(prefix) }
        while order.count > max(limits.maxEntries, 0) { cache[order.removeFirst()] = nil }
    }

    /// Counts a lookup against `uid`'s minute; false once the minute's are spent.
    private func admit(_ uid: UInt32) -> Bool {
        let time = now()
        windows = windows.filter { time.timeIntervalSince($0.value.start) < 60 }
        var window = windows[uid] ?? (time, 0)
        guard window.count < limits.lookupsPerMinute else { return false }
        window.count += 1
        windows[uid] = window
        return true
    }
}

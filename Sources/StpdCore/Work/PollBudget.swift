import Synchronization

/// Per-uid budgets for the Stripe-bound work a user leaves running: how many polls (intent and
/// Source) one uid may have running at once, and how many Stripe requests per second their polls
/// may send together (a token bucket per uid). Every request goes out on the account's one key,
/// so one user's 1,000 polls once sent 938 requests/s and could spend the account's rate limit
/// for everyone (issue 32.3). A poll past the count is refused when it starts (`admit`); a poll
/// past the rate waits for its turn (`turn`), so a uid's polls slow down together and others'
/// do not. What is kept per uid goes when its last poll ends.
public final class PollBudget: Sendable {
    public struct Limits: Sendable, Hashable {
        public var pollsPerUID = 200
        /// Requests per second one uid's polls send together; twice as many may go at once.
        public var requestsPerSecondPerUID = 10

        public static let pollsPerUIDRange = 1...100_000
        public static let requestsPerSecondRange = 1...10_000

        public init() {}
    }

    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    private struct State {
        /// Each uid's running polls: the poll id now current for each object polled.
        var polls: [UInt32: [String: String]] = [:]
        /// Whose each poll is, and of which object.
        var byPoll: [String: (uid: UInt32, object: String)] = [:]
        var buckets: [UInt32: Bucket] = [:]

        mutating func insert(_ uid: UInt32, _ object: String, _ pollID: String) {
            if let previous = polls[uid]?[object] { byPoll[previous] = nil }
            polls[uid, default: [:]][object] = pollID
            byPoll[pollID] = (uid, object)
        }
    }

    public let limits: Limits
    private let state = Mutex(State())
    private let clock = ContinuousClock()

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Counts in poll `pollID` of `object` for `uid` (replacing that object's poll, if it had one),
    /// or refuses it when the uid runs as many polls as allowed.
    public func admit(uid: UInt32, object: String, pollID: String) throws(DomainError) {
        let admitted = state.withLock { s in
            let polls = s.polls[uid] ?? [:]
            guard polls[object] != nil || polls.count < limits.pollsPerUID else { return false }
            s.insert(uid, object, pollID)
            return true
        }
        guard admitted else {
            throw .budgetExceeded(
                what: "polls running for this user", limit: limits.pollsPerUID, setting: "STPD_MAX_POLLS_PER_UID")
        }
    }

    /// Counts in a poll that runs already (resumed after a restart, taken over from another
    /// daemon): never refused, since it was admitted when it began.
    public func enter(uid: UInt32, object: String, pollID: String) {
        state.withLock { $0.insert(uid, object, pollID) }
    }

    /// Poll `pollID` ended, or will not run here (stopped, replaced, its lease elsewhere); a later
    /// poll of its object stays counted.
    public func leave(pollID: String) {
        let now = clock.now
        state.withLock { s in
            guard let (uid, object) = s.byPoll.removeValue(forKey: pollID) else { return }
            guard s.polls[uid]?[object] == pollID else { return }
            s.polls[uid]?[object] = nil
            guard s.polls[uid]?.isEmpty == true else { return }
            s.polls[uid] = nil
            // The bucket goes too once it has filled again: starting over gives no extra burst.
            if let bucket = s.buckets[uid], refilled(bucket, now).tokens >= burst { s.buckets[uid] = nil }
        }
    }

    /// The polls `uid` runs now.
    public func running(uid: UInt32) -> Int { state.withLock { $0.polls[uid]?.count ?? 0 } }

    /// How many uids have anything kept (for tests: nothing once every poll ended and refilled).
    public var uidsHeld: Int { state.withLock { Set($0.polls.keys).union($0.buckets.keys).count } }

    private var rate: Double { Double(limits.requestsPerSecondPerUID) }
    private var burst: Double { 2 * rate }

    private func refilled(_ bucket: Bucket, _ now: ContinuousClock.Instant) -> Bucket {
        let elapsed = bucket.at.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Bucket(tokens: min(burst, bucket.tokens + seconds * rate), at: now)
    }

    /// Takes `uid`'s next request turn: how long to wait before sending (zero when a token is
    /// there). Turns are handed out in order, so waiting requests go out evenly spaced.
    public func reserveTurn(uid: UInt32) -> Duration {
        let now = clock.now
        return state.withLock { s in
            var bucket = refilled(s.buckets[uid] ?? Bucket(tokens: burst, at: now), now)
            bucket.tokens -= 1
            s.buckets[uid] = bucket
            return bucket.tokens >= 0 ? .zero : .seconds(-bucket.tokens / rate)
        }
    }

    /// Waits for `uid`'s next request turn; returns at once when the task is cancelled.
    public func turn(uid: UInt32) async {
        let wait = reserveTurn(uid: uid)
        if wait > .zero { try? await Task.sleep(for: wait) }
    }
}

import StpdCore
import Testing

/// Issue 32.3: 1,000 polls of one uid sent 938 Stripe requests/s on the account's one key. A
/// uid's polls are counted (one more is refused, naming the setting) and paced by a token bucket;
/// what is kept for a uid goes when its last poll ends.
@Suite struct PollBudgetTests {
    func limits(polls: Int = 2, rate: Int = 10) -> PollBudget.Limits {
        var limits = PollBudget.Limits()
        limits.pollsPerUID = polls
        limits.requestsPerSecondPerUID = rate
        return limits
    }

    @Test func aUIDRunsAtMostItsPolls() throws {
        let budget = PollBudget(limits: limits())
        try budget.admit(uid: 1001, object: "pi_1", pollID: "ipoll_1")
        try budget.admit(uid: 1001, object: "src_1", pollID: "poll_1")
        #expect(
            throws: DomainError.budgetExceeded(
                what: "polls running for this user", limit: 2, setting: "STPD_MAX_POLLS_PER_UID")
        ) { try budget.admit(uid: 1001, object: "pi_2", pollID: "ipoll_2") }
        // Another uid has its own; a new poll of an object polled already replaces it.
        try budget.admit(uid: 1002, object: "pi_2", pollID: "ipoll_3")
        try budget.admit(uid: 1001, object: "pi_1", pollID: "ipoll_4")
        #expect(budget.running(uid: 1001) == 2)
        // The replaced poll's end leaves the new one counted.
        budget.leave(pollID: "ipoll_1")
        #expect(budget.running(uid: 1001) == 2)
        budget.leave(pollID: "ipoll_4")
        try budget.admit(uid: 1001, object: "pi_2", pollID: "ipoll_5")
    }

    @Test func aResumedPollIsCountedWithoutRefusal() {
        let budget = PollBudget(limits: limits(polls: 1))
        budget.enter(uid: 1001, object: "pi_1", pollID: "ipoll_1")
        budget.enter(uid: 1001, object: "pi_2", pollID: "ipoll_2")
        #expect(budget.running(uid: 1001) == 2)
        #expect(throws: DomainError.self) { try budget.admit(uid: 1001, object: "pi_3", pollID: "ipoll_3") }
    }

    @Test func requestsTakeTurnsPastTheBurst() {
        let budget = PollBudget(limits: limits(rate: 10))
        for _ in 0..<20 { #expect(budget.reserveTurn(uid: 1001) == .zero) }
        let next = budget.reserveTurn(uid: 1001)
        #expect(next > .zero && next <= .milliseconds(110))
        for _ in 0..<8 { _ = budget.reserveTurn(uid: 1001) }
        let tenth = budget.reserveTurn(uid: 1001)
        #expect(tenth > .milliseconds(900) && tenth <= .milliseconds(1010), "evenly spaced: \(tenth)")
        #expect(budget.reserveTurn(uid: 1002) == .zero, "another uid has a bucket of its own")
    }

    @Test func nothingIsKeptForAUIDOnceItsPollsEnd() throws {
        let budget = PollBudget(limits: limits(polls: 1000))
        for n in 0..<1000 { try budget.admit(uid: 1001, object: "pi_\(n)", pollID: "ipoll_\(n)") }
        #expect(budget.uidsHeld == 1)
        for n in 0..<1000 { budget.leave(pollID: "ipoll_\(n)") }
        #expect(budget.running(uid: 1001) == 0)
        #expect(budget.uidsHeld == 0)
    }
}

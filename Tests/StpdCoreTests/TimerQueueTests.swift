import Synchronization
import Testing

@testable import StpdCore

/// `TimerQueue` on a `ManualClock`: one sleeper on the clock for every timer, fired in deadline
/// order, nearby deadlines together, cancelled ones never, and nothing sleeping once none is set.
@Suite("TimerQueue", .timeLimit(.minutes(1)))
struct TimerQueueTests {
    @Test func firesInDeadlineOrderWithOneSleeperForAll() async {
        let clock = ManualClock()
        let timers = TimerQueue(clock: clock, tolerance: .zero)
        let fired = Fired()
        for seconds in [3, 1, 2] { timers.schedule(after: .seconds(seconds)) { fired.add(seconds) } }
        await clock.sleepersArrived(1)
        #expect(clock.sleeperCount == 1)
        for _ in 0..<3 {
            clock.advance(by: .seconds(1))
            await fired.arrivals(fired.count + 1)
        }
        #expect(fired.values == [1, 2, 3])
        await until { clock.sleeperCount == 0 }
        #expect(timers.count == 0)
    }

    @Test func deadlinesWithinTheToleranceFireTogether() async {
        let clock = ManualClock()
        let timers = TimerQueue(clock: clock, tolerance: .milliseconds(10))
        let fired = Fired()
        timers.schedule(after: .milliseconds(1000)) { fired.add(1) }
        timers.schedule(after: .milliseconds(1005)) { fired.add(2) }
        timers.schedule(after: .milliseconds(1020)) { fired.add(3) }
        await clock.sleepersArrived(1)
        clock.advance(by: .milliseconds(1000))
        await fired.arrivals(2)
        #expect(fired.values == [1, 2])
        await clock.sleepersArrived(1)
        clock.advance(by: .milliseconds(20))
        await fired.arrivals(3)
        #expect(fired.values == [1, 2, 3])
    }

    @Test func aCancelledTimerNeverFiresAndTheLastOneLeavesNothingAsleep() async {
        let clock = ManualClock()
        let timers = TimerQueue(clock: clock, tolerance: .zero)
        let fired = Fired()
        let first = timers.schedule(after: .seconds(1)) { fired.add(1) }
        let second = timers.schedule(after: .seconds(2)) { fired.add(2) }
        await clock.sleepersArrived(1)
        #expect(timers.cancel(first))
        #expect(!timers.cancel(first))
        clock.advance(by: .seconds(2))
        await fired.arrivals(1)
        #expect(fired.values == [2])
        #expect(!timers.cancel(second))

        let third = timers.schedule(after: .seconds(5)) { fired.add(3) }
        await clock.sleepersArrived(1)
        #expect(timers.cancel(third))
        #expect(clock.sleeperCount == 0)
        clock.advance(by: .seconds(10))
        #expect(fired.values == [2])
    }

    @Test func aSleepEndsWhenItsTimeHasPassedOrAtOnceWhenItsTaskIsCancelled() async {
        let clock = ManualClock()
        let timers = TimerQueue(clock: clock, tolerance: .zero)
        let passed = Task { await timers.sleep(for: .seconds(1)) }
        await clock.sleepersArrived(1)
        clock.advance(by: .seconds(1))
        #expect(await passed.value)

        let cancelled = Task { await timers.sleep(for: .seconds(60)) }
        await clock.sleepersArrived(1)
        cancelled.cancel()
        #expect(await !cancelled.value)
        #expect(timers.count == 0)
        await until { clock.sleeperCount == 0 }
    }

    @Test func anEarlierTimerWakesBeforeTheOneAlreadyAsleep() async {
        let clock = ManualClock()
        let timers = TimerQueue(clock: clock, tolerance: .zero)
        let fired = Fired()
        timers.schedule(after: .seconds(10)) { fired.add(10) }
        await clock.sleepersArrived(1)
        timers.schedule(after: .seconds(1)) { fired.add(1) }
        // The task asleep until 10 s makes way for one asleep until 1 s.
        await until { clock.sleeperCount == 1 }
        clock.advance(by: .seconds(1))
        await fired.arrivals(1)
        #expect(fired.values == [1])
        await clock.sleepersArrived(1)
        clock.advance(by: .seconds(9))
        await fired.arrivals(2)
        #expect(fired.values == [1, 10])
    }
}

/// What fired, in order, and a wait for the n-th.
private final class Fired: Sendable {
    private let state = Mutex<[Int]>([])
    var values: [Int] { state.withLock { $0 } }
    var count: Int { values.count }
    func add(_ value: Int) { state.withLock { $0.append(value) } }
    func arrivals(_ count: Int) async { await until { self.count >= count } }
}

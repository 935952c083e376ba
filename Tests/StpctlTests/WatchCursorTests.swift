import StpctlKit
import Testing

@Suite struct WatchCursorTests {
    /// `accept` outside #expect, which cannot call a mutating method.
    func printed(_ cursor: inout WatchCursor, _ seq: Int64) -> Bool {
        cursor.accept(seq: seq)
    }

    @Test func withoutSinceItStartsLiveAtTheSubscribeReplysLatestSeq() {
        var cursor = WatchCursor()
        #expect(cursor.since == nil)
        cursor.subscribed(latestSeq: 41)
        #expect(cursor.since == 41)
        #expect(cursor.lastPrinted == nil)
        // A second subscribe (after a reconnect) keeps the position it already has.
        cursor.subscribed(latestSeq: 90)
        #expect(cursor.since == 41)
    }

    @Test func sinceIsKeptUntilAnEventIsPrinted() {
        var cursor = WatchCursor(since: 0)
        cursor.subscribed(latestSeq: 10)
        #expect(cursor.since == 0)
    }

    @Test func resumesAfterTheLastEventPrinted() {
        var cursor = WatchCursor(since: 0)
        cursor.subscribed(latestSeq: 3)
        #expect(printed(&cursor, 1))
        #expect(printed(&cursor, 2))
        #expect(printed(&cursor, 5))  // a gap: 3 and 4 did not match the filter
        #expect(cursor.lastPrinted == 5)
        #expect(cursor.since == 5)
    }

    @Test func duplicatesAreNotPrinted() {
        var cursor = WatchCursor(since: 0)
        #expect(printed(&cursor, 7))
        #expect(!printed(&cursor, 7))
        #expect(!printed(&cursor, 6))
        #expect(printed(&cursor, 8))
        #expect(cursor.lastPrinted == 8)
    }

    @Test func droppedResumesFromResumeSinceWhenItIsAhead() {
        var cursor = WatchCursor(since: 0)
        _ = cursor.accept(seq: 4)
        // The daemon had looked at events up to 9 (5...9 did not match): no need to replay them.
        cursor.dropped(resumeSince: 9)
        #expect(cursor.since == 9)
        #expect(cursor.lastPrinted == 4)
    }

    @Test func droppedNeverGoesBackBeforeWhatWasPrinted() {
        var cursor = WatchCursor(since: 0)
        _ = cursor.accept(seq: 12)
        cursor.dropped(resumeSince: 10)
        #expect(cursor.since == 12)
        // And should the daemon replay 11 and 12 anyway, they are duplicates.
        #expect(!printed(&cursor, 11))
        #expect(!printed(&cursor, 12))
        #expect(printed(&cursor, 13))
    }

    @Test func cursorExpiredContinuesFromTheOldestKept() {
        var cursor = WatchCursor(since: 0)
        _ = cursor.accept(seq: 3)
        let warning = cursor.cursorExpired(oldestSeq: 20)
        #expect(cursor.since == 19)
        #expect(cursor.lastPrinted == 3)
        #expect(warning.contains("data.oldestSeq = 20"))
        #expect(warning.contains("seq 4 to 19 were missed"))
        #expect(warning.contains("continuing from seq 20"))
        #expect(printed(&cursor, 20))
    }

    @Test func cursorExpiredWithOneEventMissed() {
        var cursor = WatchCursor(since: 5)
        #expect(cursor.cursorExpired(oldestSeq: 7).contains("seq 6 was missed"))
        #expect(cursor.since == 6)
    }

    @Test func cursorExpiredFromNothing() {
        var cursor = WatchCursor(since: 0)
        let warning = cursor.cursorExpired(oldestSeq: 1)
        #expect(cursor.since == 0)
        #expect(!warning.contains("missed"))
    }

    @Test func cursorAheadStartsOverWithTheNewLog() {
        var cursor = WatchCursor(since: 0)
        _ = cursor.accept(seq: 50)
        let warning = cursor.cursorAhead(latestSeq: 2)
        #expect(cursor.since == 2)
        #expect(cursor.lastPrinted == nil)
        #expect(warning.contains("ends at seq 2"))
        // Seqs of the new log are printed though they were printed before from the old one.
        #expect(printed(&cursor, 3))
    }
}

@Suite struct BackoffTests {
    @Test func doublesUpToTheMaximumAndResets() {
        var backoff = Backoff()
        let delays = (0..<7).map { _ in backoff.delay() }
        let expected: [Duration] =
            [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800)]
            + [.milliseconds(1600), .seconds(2), .seconds(2)]
        #expect(delays == expected)
        backoff.reset()
        #expect(backoff.delay() == .milliseconds(100))
    }
}

@Suite struct LongPollTests {
    @Test func theGlobalTimeoutComesOnTopOfTheWait() {
        #expect(LongPoll.clientTimeout(global: 30, wait: 120) == 150)
        #expect(LongPoll.clientTimeout(global: 5, wait: nil) == 5 + LongPoll.daemonDefaultWait)
        #expect(LongPoll.clientTimeout(global: 5, wait: 0) == 5)
    }

    @Test func zeroStillMeansForever() {
        #expect(LongPoll.clientTimeout(global: 0, wait: 10) == 0)
    }
}

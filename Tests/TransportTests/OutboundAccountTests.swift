import NIOCore
import Synchronization
import Testing

@testable import RPCTransport

// Issue 32.4: the outbound bound was per connection, so 1,000 connections of one uid that never
// read made the daemon hold 309 MB. The outboxes of one uid share an account: what they hold
// together is bounded, and an outbox refused for the uid's sake goes on once another gives back.

@Suite struct OutboundAccountTests {
    func frame(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 0x61, count: count) }

    @Test func theOutboxesOfOneUIDAreBoundedTogether() {
        let account = OutboundAccount(limit: 100)
        let first = Outbox(limit: 100, account: account)
        let second = Outbox(limit: 100, account: account)
        #expect(first.offer(frame(60)))
        #expect(account.committed == 60)
        #expect(!second.offer(frame(50)), "within its own budget, past the uid's")
        #expect(second.offer(frame(40)))
        #expect(account.committed == 100)
        #expect(first.poll()?.readableBytes == 60)
        #expect(account.committed == 40)
        #expect(second.offer(frame(50)))
        // Another uid's account is its own.
        let other = Outbox(limit: 100, account: OutboundAccount(limit: 100))
        #expect(other.offer(frame(90)))
    }

    @Test func aCallsShareFitsOnlyTheLowerHalf() {
        let account = OutboundAccount(limit: 100)
        let first = Outbox(limit: 100, account: account)
        let second = Outbox(limit: 100, account: account)
        #expect(first.tryReserve(40))
        #expect(!second.tryReserve(20), "shares stop at half the account")
        #expect(first.offer(frame(50)), "the other half is for pages and frames")
        first.release(40)
        #expect(account.committed == 50)
    }

    @Test func anOutboxWaitingForTheUIDsRoomIsWokenWhenAnotherGivesBack() async {
        let account = OutboundAccount(limit: 100)
        let wakes = Mutex(0)
        let first = Outbox(limit: 100, account: account)
        let second = Outbox(limit: 100, account: account) { wakes.withLock { $0 += 1 } }
        #expect(first.offer(frame(90)))
        #expect(!second.tryReserve(30))
        // The reservation waits for room that only the first outbox can give back (or finds it,
        // if the poll below comes first).
        let waiting = Task { await second.reserve(30) }
        #expect(first.poll()?.readableBytes == 90)
        #expect(await waiting.value)
        #expect(second.committedBytes == 30)
        #expect(wakes.withLock { $0 } >= 1, "the handler of the waiting connection is told to look again")
        second.release(30)
        #expect(account.committed == 0)
    }

    @Test func aDetachedOutboxGivesBackAllItHeld() {
        let account = OutboundAccount(limit: 100)
        let closed = Outbox(limit: 100, account: account)
        #expect(closed.offer(frame(30)))
        #expect(closed.tryReserve(20))
        #expect(account.committed == 50)
        closed.detach()
        #expect(account.committed == 0)
        closed.release(20)
        _ = closed.poll()
        #expect(account.committed == 0, "what it gives back later was given back already")
    }

    @Test func accountsAreKeptWhileTheUIDHasAConnection() {
        let accounts = OutboundAccounts(limit: 100)
        let first = accounts.open(uid: 1000)
        #expect(accounts.open(uid: 1000) === first)
        #expect(accounts.open(uid: 1001) !== first)
        accounts.close(uid: 1000)
        #expect(accounts.open(uid: 1000) === first)
        accounts.close(uid: 1000)
        accounts.close(uid: 1000)
        #expect(accounts.open(uid: 1000) !== first, "made again after the last connection closed")
    }
}

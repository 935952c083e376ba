import NIOCore
import RPCTransport
import Testing

// The outbox decides who waits when a client reads slowly: replies (`send`) wait for room,
// notifications (`offer`) are refused instead, so one slow subscriber never stalls a fan-out.

private func frame(_ size: Int, _ fill: UInt8 = 0x61) -> ByteBuffer {
    ByteBuffer(bytes: [UInt8](repeating: fill, count: size))
}

@Suite(.timeLimit(.minutes(1)))
struct OutboxTests {
    @Test func offerAdmitsWithinTheLimitAndRefusesPastIt() {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(4)))
        #expect(outbox.offer(frame(6)))  // exactly at the limit
        #expect(outbox.queuedBytes == 10)
        #expect(!outbox.offer(frame(1)))
        #expect(outbox.queuedBytes == 10, "a refused frame is not queued")
    }

    /// A frame larger than the whole budget must still go out eventually, or the connection
    /// could never send it: it is admitted when nothing else is queued.
    @Test func offerAdmitsAnOversizedFrameIntoAnEmptyQueue() {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(50)))
        #expect(!outbox.offer(frame(1)))
    }

    @Test func forcedOfferIsAdmittedPastTheLimit() async {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(10)))
        #expect(outbox.offer(frame(5, 0x62), force: true))
        #expect(outbox.queuedBytes == 15)
        #expect(await outbox.next() == frame(10))
        #expect(await outbox.next() == frame(5, 0x62))
    }

    @Test func framesComeOutInOrder() async {
        let outbox = Outbox(limit: 100)
        for fill in UInt8(0x61)...UInt8(0x65) { #expect(outbox.offer(frame(3, fill))) }
        for fill in UInt8(0x61)...UInt8(0x65) { #expect(await outbox.next() == frame(3, fill)) }
        #expect(outbox.queuedBytes == 0)
    }

    @Test func aWaitingWriterGetsTheNextFrame() async {
        let outbox = Outbox(limit: 10)
        async let taken = outbox.next()
        #expect(outbox.offer(frame(4)))
        #expect(await taken == frame(4))
    }

    /// `send` over budget waits; it is resumed when the writer takes a frame, and its frame
    /// comes out after the one that was in the way.
    @Test func sendWaitsForRoomAndResumesWhenTheWriterTakesFrames() async {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(8, 0x61)))
        let sender = Task { await outbox.send(frame(8, 0x62)) }
        #expect(await outbox.next() == frame(8, 0x61))
        #expect(await sender.value, "send completes once there is room")
        #expect(await outbox.next() == frame(8, 0x62))
        #expect(outbox.queuedBytes == 0)
    }

    /// These would hang (and hit the time limit) if `send` waited when there is room.
    @Test func sendIntoRoomDoesNotWait() async {
        let outbox = Outbox(limit: 10)
        #expect(await outbox.send(frame(4)))
        #expect(await outbox.send(frame(6)))
        #expect(outbox.queuedBytes == 10)
        _ = await outbox.next()
        _ = await outbox.next()
        #expect(await outbox.send(frame(50)), "an oversized reply is admitted into an empty queue")
    }

    /// Whether the sender reached its wait before `finish` or not, it must report false:
    /// its frame never fitted, so it was never queued.
    @Test func finishReleasesAWaitingSendWithFalse() async {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(8)))
        let sender = Task { await outbox.send(frame(8)) }
        outbox.finish()
        #expect(await sender.value == false)
        #expect(await outbox.next() == frame(8), "what was queued is still written")
        #expect(await outbox.next() == nil)
    }

    @Test func finishDrainsThenEndsNext() async {
        let outbox = Outbox(limit: 100)
        #expect(outbox.offer(frame(1, 0x61)))
        #expect(outbox.offer(frame(1, 0x62)))
        outbox.finish()
        #expect(await outbox.next() == frame(1, 0x61))
        #expect(await outbox.next() == frame(1, 0x62))
        #expect(await outbox.next() == nil)
        #expect(await outbox.next() == nil)
    }

    @Test func finishWakesAWaitingWriter() async {
        let outbox = Outbox(limit: 10)
        async let taken = outbox.next()
        outbox.finish()
        #expect(await taken == nil)
    }

    @Test func nothingIsAcceptedAfterFinish() async {
        let outbox = Outbox(limit: 10)
        outbox.finish()
        #expect(await outbox.send(frame(1)) == false)
        #expect(!outbox.offer(frame(1)))
        #expect(!outbox.offer(frame(1), force: true))
        #expect(outbox.queuedBytes == 0)
    }

    /// Withdrawing takes back the queued notifications (their tags, oldest first) and keeps the
    /// replies; the final frames then go out first, ahead of those replies, and the outbox ends.
    @Test func withdrawnNotificationsLeaveRepliesAndTheFinalFramesGoFirst() async {
        let outbox = Outbox(limit: 100)
        #expect(outbox.offer(frame(2, 0x61), tag: 1))
        #expect(await outbox.send(frame(2, 0x72)))  // a reply
        #expect(outbox.offer(frame(2, 0x62), tag: 2))
        #expect(outbox.offer(frame(2, 0x63)))  // untagged
        let withdrawn = outbox.withdrawNotifications()
        #expect(withdrawn.map { $0 as? Int } == [1, 2, nil])
        #expect(outbox.queuedBytes == 2)
        #expect(!outbox.offer(frame(1)), "nothing new is taken")
        #expect(await outbox.send(frame(1)) == false)

        outbox.finish(first: [frame(3, 0x66), frame(3, 0x67)])
        #expect(await outbox.next() == frame(3, 0x66))
        #expect(await outbox.next() == frame(3, 0x67))
        #expect(await outbox.next() == frame(2, 0x72))
        #expect(await outbox.next() == nil)
    }

    /// A writer already waiting on an empty, withdrawn outbox gets the final frame.
    @Test func aWaitingWriterGetsTheFinalFrame() async {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(8), tag: 1))
        #expect(await outbox.next() == frame(8))
        async let taken = outbox.next()
        #expect(outbox.withdrawNotifications().isEmpty)
        outbox.finish(first: [frame(4, 0x66)])
        #expect(await taken == frame(4, 0x66))
        #expect(await outbox.next() == nil)
    }

    /// `room` waits while a frame would not fit, and says false once the outbox is withdrawn.
    @Test func roomWaitsForTheWriterAndEndsWithTheOutbox() async {
        let outbox = Outbox(limit: 10)
        #expect(await outbox.room(for: 10))
        #expect(outbox.offer(frame(8)))
        let waiting = Task { await outbox.room(for: 8) }
        _ = await outbox.next()
        #expect(await waiting.value)

        #expect(outbox.offer(frame(8)))
        let refused = Task { await outbox.room(for: 8) }
        _ = outbox.withdrawNotifications()
        #expect(await refused.value == false)
    }
}

/// Issue 24.1: the budget counts bytes reserved for replies being built, not only those queued.
@Suite(.timeLimit(.minutes(1)))
struct OutboxReservationTests {
    @Test func reservedBytesCountAgainstNotificationsAndReservations() async {
        let outbox = Outbox(limit: 10)
        #expect(await outbox.reserve(8))
        #expect(!outbox.offer(frame(4)), "8 reserved leave room for 2")
        #expect(outbox.offer(frame(2)))
        let waiting = Task { await outbox.reserve(5) }
        outbox.release(8)
        #expect(await waiting.value, "a release makes room for a waiting reservation")
        outbox.release(5)
        #expect(outbox.offer(frame(8)))
    }

    @Test func aReservationWaitsWhileTheQueueIsFullAndEndsWithTheOutbox() async {
        let outbox = Outbox(limit: 10)
        #expect(outbox.offer(frame(10)))
        let waiting = Task { await outbox.reserve(1) }
        #expect(await outbox.next() == frame(10))
        #expect(await waiting.value, "taking the frame made room")
        let refused = Task { await outbox.reserve(20) }
        outbox.finish()
        #expect(await refused.value == false)
    }
}

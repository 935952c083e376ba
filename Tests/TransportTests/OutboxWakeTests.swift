import NIOCore
import Synchronization
import Testing

@testable import RPCTransport

// The connection's handler is told once that frames are waiting, however many are queued
// before it looks, and again only after it has found the outbox empty.

@Suite struct OutboxWakeTests {
    @Test func wakesOncePerBatchAndAgainAfterDraining() {
        let wakes = Mutex(0)
        let outbox = Outbox(limit: 100) { wakes.withLock { $0 += 1 } }
        for fill in UInt8(0x61)...UInt8(0x63) { #expect(outbox.offer(ByteBuffer(bytes: [fill]))) }
        #expect(wakes.withLock { $0 } == 1)
        #expect(outbox.poll() == ByteBuffer(bytes: [0x61]))
        #expect(outbox.offer(ByteBuffer(bytes: [0x64])))
        #expect(wakes.withLock { $0 } == 1, "not drained yet: the handler is still looking")
        for fill in UInt8(0x62)...UInt8(0x64) { #expect(outbox.poll() == ByteBuffer(bytes: [fill])) }
        #expect(outbox.poll() == nil)
        #expect(outbox.offer(ByteBuffer(bytes: [0x65])))
        #expect(wakes.withLock { $0 } == 2)
        outbox.finish()
        #expect(wakes.withLock { $0 } == 3, "finishing wakes the handler so it can close")
        #expect(!outbox.isDone, "a frame is still queued")
        #expect(outbox.poll() == ByteBuffer(bytes: [0x65]))
        #expect(outbox.isDone)
    }

    @Test func pollMakesRoomForAWaitingSend() async {
        let outbox = Outbox(limit: 4)
        #expect(outbox.offer(ByteBuffer(bytes: [1, 2, 3, 4])))
        let sender = Task { await outbox.send(ByteBuffer(bytes: [5, 6])) }
        // The send completes once a poll has taken the frame in its way.
        #expect(outbox.poll() == ByteBuffer(bytes: [1, 2, 3, 4]))
        #expect(await sender.value)
        #expect(outbox.poll() == ByteBuffer(bytes: [5, 6]))
    }
}

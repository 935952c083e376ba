import JSONRPC
import StpdCore
import Testing

@Suite("EventBus")
struct EventBusTests {
    func events(_ seqs: Int64...) -> [Event] {
        seqs.map { Event(seq: $0, time: t0, type: "t", objectId: "o", objectKind: "k", ownerUID: 0, object: nil) }
    }

    @Test func eventsPublishedOutOfOrderAreReleasedInSeqOrder() {
        let bus = EventBus(lastPublished: 0)
        let listener = bus.add(id: "l") { _ in RecordingListener() }

        // Commit 3 finished first: it waits for 1 and 2.
        bus.publish(events(3))
        #expect(listener.seqs.isEmpty)
        #expect(bus.lastPublished == 0)

        bus.publish(events(1, 2))
        #expect(listener.seqs == [1, 2, 3])
        #expect(bus.lastPublished == 3)

        bus.publish(events(5))
        bus.publish(events(4))
        #expect(listener.seqs == [1, 2, 3, 4, 5])
    }

    @Test func duplicateAndOldSeqsAreIgnored() {
        let bus = EventBus(lastPublished: 10)
        let listener = bus.add(id: "l") { _ in RecordingListener() }

        bus.publish(events(9, 10))  // at or before where the bus started
        #expect(listener.seqs.isEmpty)

        bus.publish(events(11, 12))
        bus.publish(events(12, 11))  // already out
        bus.publish(events(14))
        bus.publish(events(14))  // held twice
        bus.publish(events(13, 13))
        #expect(listener.seqs == [11, 12, 13, 14])
        #expect(bus.lastPublished == 14)
    }

    @Test func addHandsTheListenerTheLastPublishedSeq() {
        let bus = EventBus(lastPublished: 0)
        bus.publish(events(1, 2))
        var seen: Int64?
        bus.add(id: "l") { lastPublished in
            seen = lastPublished
            return RecordingListener()
        }
        #expect(seen == 2)
    }

    @Test func aListenerReturningFalseIsRemoved() {
        let bus = EventBus(lastPublished: 0)
        let quitter = bus.add(id: "quitter") { _ in RecordingListener(keep: 2) }
        let stayer = bus.add(id: "stayer") { _ in RecordingListener() }
        #expect(bus.listenerCount == 2)

        bus.publish(events(1, 2, 3))
        #expect(quitter.seqs == [1, 2])
        #expect(stayer.seqs == [1, 2, 3])
        #expect(bus.listenerCount == 1)

        bus.publish(events(4))
        #expect(quitter.seqs == [1, 2])
        #expect(stayer.seqs == [1, 2, 3, 4])
    }

    @Test func removeStopsDelivery() {
        let bus = EventBus(lastPublished: 0)
        let listener = bus.add(id: "l") { _ in RecordingListener() }
        bus.publish(events(1))
        bus.remove(id: "l")
        bus.publish(events(2))
        #expect(listener.seqs == [1])
        #expect(bus.listenerCount == 0)
    }
}

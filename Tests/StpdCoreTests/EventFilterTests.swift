import JSONRPC
import StpdCore
import Testing

@Suite("EventFilter")
struct EventFilterTests {
    func event(_ type: String, id: String = "pc_1", owner: UInt32 = 1000) -> Event {
        Event(seq: 1, time: t0, type: type, objectId: id, objectKind: "payment_context", ownerUID: owner, object: [:])
    }

    @Test func emptyFilterMatchesEverything() {
        let filter = EventFilter()
        #expect(filter.matches(event("payment_context.created")))
        #expect(filter.matches(event("poll.finished", id: "po_9", owner: 0)))
    }

    @Test func objectIds() {
        let filter = EventFilter(objectIds: ["pc_1", "pc_2"])
        #expect(filter.matches(event("payment_context.created", id: "pc_1")))
        #expect(filter.matches(event("payment_context.created", id: "pc_2")))
        #expect(!filter.matches(event("payment_context.created", id: "pc_3")))
    }

    @Test func exactTypes() {
        let filter = EventFilter(types: ["payment_context.created", "poll.finished"])
        #expect(filter.matches(event("payment_context.created")))
        #expect(filter.matches(event("poll.finished")))
        #expect(!filter.matches(event("payment_context.updated")))
        // Exact means exact: neither a longer nor a shorter type matches.
        #expect(!filter.matches(event("payment_context.created.late")))
        #expect(!filter.matches(event("payment_context")))
    }

    @Test func kindWildcardMatchesEveryTypeOfThatKind() {
        let filter = EventFilter(types: ["payment_context.*"])
        #expect(filter.matches(event("payment_context.created")))
        #expect(filter.matches(event("payment_context.updated")))
        // The prefix includes the dot: another kind that merely starts the same does not match.
        #expect(!filter.matches(event("payment_contextual.created")))
        #expect(!filter.matches(event("customer_session.created")))
    }

    @Test func exactAndWildcardTypesCombine() {
        let filter = EventFilter(types: ["poll.*", "payment_context.succeeded"])
        #expect(filter.matches(event("poll.started")))
        #expect(filter.matches(event("payment_context.succeeded")))
        #expect(!filter.matches(event("payment_context.failed")))
    }

    @Test func viewerUIDSeesOnlyObjectsThatUserCreated() {
        let filter = EventFilter(viewerUID: 1000)
        #expect(filter.matches(event("payment_context.created", owner: 1000)))
        #expect(!filter.matches(event("payment_context.created", owner: 1001)))
        #expect(!filter.matches(event("payment_context.created", owner: 0)))
    }

    @Test func allConditionsMustHold() {
        let filter = EventFilter(objectIds: ["pc_1"], types: ["payment_context.*"], viewerUID: 1000)
        #expect(filter.matches(event("payment_context.created", id: "pc_1", owner: 1000)))
        #expect(!filter.matches(event("payment_context.created", id: "pc_2", owner: 1000)))
        #expect(!filter.matches(event("poll.started", id: "pc_1", owner: 1000)))
        #expect(!filter.matches(event("payment_context.created", id: "pc_1", owner: 1001)))
    }
}

import Synchronization

/// One subscriber's feed: history after `since` replayed from the store, then live events,
/// with no gap and no duplicate at the seam. It listens on the bus from the moment it is
/// created (holding live events back), so nothing committed meanwhile is missed; events seen
/// both in history and live are told apart by `seq`.
public final class Subscription: EventListener, Sendable {
    public let id: String
    public let filter: EventFilter
    private let sink: any EventSink
    /// Live events held while history is replayed; past this many the subscriber is dropped.
    private let holdLimit: Int

    private enum Mode {
        case holding([Event])
        case live, closed
    }
    private struct State {
        var mode: Mode = .holding([])
        var lastDelivered: Int64
    }

    private let state: Mutex<State>

    /// The last `seq` published when the subscription joined the bus: everything after it
    /// reaches the subscriber live (or from history, when it was asked to replay).
    public let joinedAfter: Int64

    init(id: String, filter: EventFilter, sink: any EventSink, startAfter: Int64, joinedAfter: Int64, holdLimit: Int) {
        self.id = id
        self.filter = filter
        self.sink = sink
        self.holdLimit = holdLimit
        self.joinedAfter = joinedAfter
        state = Mutex(State(lastDelivered: startAfter))
    }

    public func receive(_ event: Event) -> Bool {
        state.withLock { s in
            switch s.mode {
            case .closed:
                return false
            case .holding(var held):
                guard held.count < holdLimit else { return drop(&s, .slowConsumer) }
                held.append(event)
                s.mode = .holding(held)
                return true
            case .live:
                return deliver(event, &s)
            }
        }
    }

    /// Replays history from the store, then switches to live delivery.
    func run(store: any StateStore, pageSize: Int = 500) async throws {
        var cursor = state.withLock { $0.lastDelivered }
        while true {
            let page = try await store.events(after: cursor, limit: pageSize)
            // Pruning may have run since the cursor was checked: never skip over the hole.
            if try await store.eventBounds().prunedThrough > cursor {
                return state.withLock { s in _ = drop(&s, .retention) }
            }
            guard let last = page.last else { break }
            for event in page where filter.matches(event) {
                guard isOpen, await sink.send(event, subscription: id) else { return close() }
                // Per event, so a drop during replay names exactly what was sent.
                state.withLock { $0.lastDelivered = event.seq }
            }
            cursor = last.seq
            state.withLock { $0.lastDelivered = cursor }
        }
        state.withLock { s in
            guard case .holding(let held) = s.mode else { return }
            s.mode = .live
            for event in held where !deliver(event, &s) { return }
        }
    }

    var isOpen: Bool {
        state.withLock { if case .closed = $0.mode { false } else { true } }
    }

    public func close() {
        state.withLock { $0.mode = .closed }
    }

    private func deliver(_ event: Event, _ s: inout State) -> Bool {
        guard event.seq > s.lastDelivered else { return true }
        if filter.matches(event), !sink.offer(event, subscription: id) { return drop(&s, .slowConsumer) }
        s.lastDelivered = event.seq
        return true
    }

    private func drop(_ s: inout State, _ reason: DropReason) -> Bool {
        if case .closed = s.mode { return false }
        s.mode = .closed
        sink.dropped(subscription: id, resumeSince: s.lastDelivered, reason: reason)
        return false
    }
}

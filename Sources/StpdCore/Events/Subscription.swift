import Synchronization

/// One subscriber's feed: history after `since` replayed from the store, then live events,
/// with no gap and no duplicate at the seam. It listens on the bus from the moment it is
/// created (holding live events back), so nothing committed meanwhile is missed; events seen
/// both in history and live are told apart by `seq`.
public final class Subscription: EventListener, Sendable {
    public let id: String
    public let filter: EventFilter
    public var routing: EventFilter? { filter }
    private let sink: any EventSink
    /// Matching live events held while history is replayed; past this many the subscriber is dropped.
    private let holdLimit: Int
    /// Bytes of history read at once while replaying.
    private let pageBytes: Int

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

    init(
        id: String, filter: EventFilter, sink: any EventSink, startAfter: Int64, joinedAfter: Int64, holdLimit: Int,
        pageBytes: Int
    ) {
        self.id = id
        self.filter = filter
        self.sink = sink
        self.holdLimit = holdLimit
        self.pageBytes = pageBytes
        self.joinedAfter = joinedAfter
        state = Mutex(State(lastDelivered: startAfter))
    }

    public func receive(_ event: Event) -> Bool {
        let outcome: Outcome = state.withLock { s in
            switch s.mode {
            case .closed:
                return .gone
            case .holding(var held):
                // Only what it will deliver counts against the hold limit.
                guard filter.matches(event) else { return .open }
                guard held.count < holdLimit else { return drop(&s) }
                held.append(event)
                s.mode = .holding(held)
                return .open
            case .live:
                return deliver(event, &s)
            }
        }
        return finish(outcome, .slowConsumer)
    }

    /// Replays history from the store, then switches to live delivery. Pages are read through
    /// the filter, so the store skips (in SQL) what this subscriber may not or need not see, and
    /// hold at most `pageSize` events and about `pageBytes` of them.
    func run(store: any StateStore, pageSize: Int = 500) async throws {
        var cursor = state.withLock { $0.lastDelivered }
        while true {
            let page = try await store.events(after: cursor, matching: filter, limit: pageSize, maxBytes: pageBytes)
            // Pruning may have run since the cursor was checked: never skip over the hole.
            if page.bounds.prunedThrough > cursor {
                _ = finish(state.withLock { drop(&$0) }, .retention)
                return
            }
            for event in page.events {
                guard await replay(event) else { return }
            }
            cursor = page.through
            state.withLock { $0.lastDelivered = max($0.lastDelivered, cursor) }
            // A page that did not end early read up to the end of the log as it was then;
            // everything after that was published to this subscription and is held.
            if !page.endedEarly { break }
        }
        let outcome: Outcome = state.withLock { s in
            guard case .holding(let held) = s.mode else { return .open }
            s.mode = .live
            for event in held {
                let outcome = deliver(event, &s)
                guard case .open = outcome else { return outcome }
            }
            return .open
        }
        _ = finish(outcome, .slowConsumer)
    }

    /// Hands one replayed event to the sink: waits for room, then offers it under the lock, so
    /// `lastDelivered` always names what the sink has taken. False once the subscription is closed.
    private func replay(_ event: Event) async -> Bool {
        while true {
            guard await sink.room(for: event, subscription: id) else {
                close()
                return false
            }
            let taken: Bool? = state.withLock { s in
                if case .closed = s.mode { return nil }
                guard sink.offer(event, subscription: id) else { return false }
                s.lastDelivered = max(s.lastDelivered, event.seq)
                return true
            }
            // Not taken: another sender on the connection filled the room first; wait again.
            guard let taken else { return false }
            if taken { return true }
        }
    }

    var isOpen: Bool {
        state.withLock { if case .closed = $0.mode { false } else { true } }
    }

    /// Ends delivery (no event reaches the sink once this returns) and returns the last `seq`
    /// delivered: every matching event up to it was handed to the sink.
    @discardableResult
    public func close() -> Int64 {
        state.withLock { s in
            s.mode = .closed
            return s.lastDelivered
        }
    }

    private enum Outcome {
        case open, gone
        /// Closed just now; the sink is told after the lock is released.
        case dropped(resumeSince: Int64)
    }

    private func deliver(_ event: Event, _ s: inout State) -> Outcome {
        guard event.seq > s.lastDelivered else { return .open }
        if filter.matches(event), !sink.offer(event, subscription: id) { return drop(&s) }
        s.lastDelivered = event.seq
        return .open
    }

    private func drop(_ s: inout State) -> Outcome {
        if case .closed = s.mode { return .gone }
        s.mode = .closed
        return .dropped(resumeSince: s.lastDelivered)
    }

    /// Tells the sink about a drop decided under the lock; true while the subscription is open.
    private func finish(_ outcome: Outcome, _ reason: DropReason) -> Bool {
        switch outcome {
        case .open: return true
        case .gone: return false
        case .dropped(let resumeSince):
            sink.dropped(subscription: id, resumeSince: resumeSince, reason: reason)
            return false
        }
    }
}

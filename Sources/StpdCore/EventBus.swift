import Synchronization

/// Where a subscription's events go. `offer` must not wait: a subscriber that cannot take an
/// event returns false and is dropped. `send` may wait (used while replaying history, where
/// waiting only holds up this one subscriber).
public protocol EventSink: Sendable {
    func offer(_ event: Event, subscription: String) -> Bool
    func send(_ event: Event, subscription: String) async -> Bool
    /// The subscription ended early; it can resume with `since: resumeSince`.
    func dropped(subscription: String, resumeSince: Int64, reason: DropReason)
}

public enum DropReason: String, Sendable, Codable {
    /// It could not take events as fast as they came.
    case slowConsumer = "slow-consumer"
    /// Retention pruned events it had not been sent yet (resuming gets CursorExpired).
    case retention
}

/// Fans committed events out to live subscribers in `seq` order. Commits may finish in any
/// order; since `seq`s are gap-free, the bus holds back an event until all before it are out.
public final class EventBus: Sendable {
    private struct State {
        var lastPublished: Int64
        var held: [Int64: Event] = [:]
        var listeners: [String: any EventListener] = [:]
    }

    private let state: Mutex<State>

    public init(lastPublished: Int64) {
        state = Mutex(State(lastPublished: lastPublished))
    }

    public var lastPublished: Int64 { state.withLock { $0.lastPublished } }

    public func publish(_ events: [Event]) {
        state.withLock { s in
            for event in events where event.seq > s.lastPublished { s.held[event.seq] = event }
            while let next = s.held.removeValue(forKey: s.lastPublished + 1) {
                s.lastPublished = next.seq
                for (id, listener) in s.listeners where !listener.receive(next) {
                    s.listeners[id] = nil
                }
            }
        }
    }

    /// Adds the listener `make` builds from the last `seq` published so far; it receives every later one.
    @discardableResult
    public func add<Listener: EventListener>(id: String, _ make: (_ lastPublished: Int64) -> Listener) -> Listener {
        state.withLock { s in
            let listener = make(s.lastPublished)
            s.listeners[id] = listener
            return listener
        }
    }

    public func remove(id: String) {
        _ = state.withLock { $0.listeners.removeValue(forKey: id) }
    }

    public var listenerCount: Int { state.withLock { $0.listeners.count } }
}

/// Receives each published event while the bus's lock is held; must not block.
/// Returns false to be removed.
public protocol EventListener: Sendable {
    func receive(_ event: Event) -> Bool
}

import Synchronization

/// Where a subscription's events go. `offer` must not wait: a subscriber that cannot take an
/// event returns false and is dropped. While replaying history, the subscription first waits
/// in `room` until the event would fit (waiting only holds up this one subscriber), then offers
/// it, so that what the sink took is always known under the subscription's lock.
public protocol EventSink: Sendable {
    func offer(_ event: Event, subscription: String) -> Bool
    /// Waits until `offer(event)` is likely to succeed; false when the sink is closing.
    func room(for event: Event, subscription: String) async -> Bool
    /// The subscription ended early; it can resume with `since: resumeSince`. Called once, with
    /// no lock of the subscription held.
    func dropped(subscription: String, resumeSince: Int64, reason: DropReason)
}

public enum DropReason: String, Sendable, Codable {
    /// It could not take events as fast as they came.
    case slowConsumer = "slow-consumer"
    /// Retention pruned events it had not been sent yet (resuming gets CursorExpired).
    case retention
}

/// Fans committed events out to live listeners in `seq` order. Commits may finish in any
/// order; since `seq`s are gap-free, the bus holds back an event until all before it are out.
///
/// Listeners are called outside the bus's lock: under it, `publish` only moves the events that
/// are ready into a delivery queue. One publisher at a time drains that queue, handing each
/// batch to a snapshot of the listeners taken with the batch, so every listener sees events in
/// `seq` order, and a listener added while a batch is out receives everything after that batch
/// (`add` tells it where that is). Each batch goes only to the listeners filed for its events
/// (`ListenerIndex`), so the cost of an event does not grow with listeners that do not want it.
/// A publisher whose events another is delivering waits for
/// them to be out, so when `publish` returns its events have reached every listener: a reply
/// sent after it follows the events on a subscriber's own connection.
public final class EventBus: Sendable {
    private struct State {
        /// The last `seq` released for delivery; every one up to it is committed.
        var lastPublished: Int64
        /// The last `seq` taken by the deliverer (with the listeners it goes to).
        var handedOut: Int64
        var held: [Int64: Event] = [:]
        var queue: [Event] = []
        var delivering = false
        var listeners = ListenerIndex()
        /// Publishers waiting for their last event to be delivered.
        var waiting: [(through: Int64, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    public init(lastPublished: Int64) {
        state = Mutex(State(lastPublished: lastPublished, handedOut: lastPublished))
    }

    public var lastPublished: Int64 { state.withLock { $0.lastPublished } }

    /// Releases the events that are next in `seq` order and returns once they (and any before
    /// them) have been delivered; events waiting for an earlier one are delivered with it.
    public func publish(_ events: [Event]) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let drain: Bool = state.withLock { s in
                for event in events where event.seq > s.lastPublished { s.held[event.seq] = event }
                while let next = s.held.removeValue(forKey: s.lastPublished + 1) {
                    s.lastPublished = next.seq
                    s.queue.append(next)
                }
                if !s.delivering {
                    s.delivering = true
                    return true
                }
                // Another publisher is delivering; it delivers these too, then resumes this one.
                s.waiting.append((s.lastPublished, done))
                return false
            }
            guard drain else { return }
            deliverQueue()
            done.resume()
        }
    }

    /// Treats every seq through `seq` as published without delivering it: for events pruned before
    /// this process could publish them (a fleet member that was far behind). Subscribers replay
    /// from the store, where the pruned events are gone anyway (their cursors expire).
    public func skip(through seq: Int64) {
        state.withLock { s in
            guard seq > s.lastPublished else { return }
            s.held = s.held.filter { $0.key > seq }
            s.lastPublished = seq
            if !s.delivering, s.queue.isEmpty { s.handedOut = max(s.handedOut, seq) }
        }
    }

    /// Delivers batches until the queue is empty; only the publisher that set `delivering` runs it.
    private func deliverQueue() {
        while true {
            typealias Round = (
                batch: [Event], plan: [(id: String, listener: any EventListener, events: [Event])],
                released: [CheckedContinuation<Void, Never>]
            )
            let (batch, plan, released) = state.withLock { s -> Round in
                // Every batch handed out before this point has been delivered.
                var released: [CheckedContinuation<Void, Never>] = []
                s.waiting.removeAll { waiter in
                    guard waiter.through <= s.handedOut else { return false }
                    released.append(waiter.continuation)
                    return true
                }
                let batch = s.queue
                s.queue = []
                guard let last = batch.last else {
                    // Nothing queued: everything published so far is out (so no publisher is left waiting).
                    s.delivering = false
                    return (batch, [], released)
                }
                s.handedOut = last.seq
                return (batch, s.listeners.plan(batch), released)
            }
            for continuation in released { continuation.resume() }
            if batch.isEmpty { return }
            var quitters: [(String, any EventListener)] = []
            // Listener by listener, so each gets its part of the batch in one go (its connection can
            // write it at once).
            for (id, listener, events) in plan {
                for event in events where !listener.receive(event) {
                    quitters.append((id, listener))
                    break
                }
            }
            if !quitters.isEmpty {
                state.withLock { s in
                    for (id, listener) in quitters where s.listeners.listener(id) === listener {
                        s.listeners.remove(id)
                    }
                }
            }
        }
    }

    /// Adds the listener `make` builds from the last `seq` handed out to listeners so far; it
    /// receives every later one. `make` runs under the bus's lock: it must only build the listener.
    @discardableResult
    public func add<Listener: EventListener>(id: String, _ make: (_ lastPublished: Int64) -> Listener) -> Listener {
        state.withLock { s in
            let listener = make(s.handedOut)
            s.listeners.insert(id, listener)
            return listener
        }
    }

    /// Removes a listener; a batch already being delivered may still reach it.
    @discardableResult
    public func remove(id: String) -> (any EventListener)? {
        state.withLock { $0.listeners.remove(id) }
    }

    public var listenerCount: Int { state.withLock { $0.listeners.count } }
}

/// Receives each published event it may want, in `seq` order, from the publisher delivering it
/// (never under the bus's lock); must not block. Returns false to be removed.
public protocol EventListener: AnyObject, Sendable {
    /// What it listens for, which files it on the bus (`ListenerIndex`): it is offered the events
    /// this may match, and no others; nil (the default) for every event. Read once, when added.
    var routing: EventFilter? { get }
    func receive(_ event: Event) -> Bool
}

extension EventListener {
    public var routing: EventFilter? { nil }
}

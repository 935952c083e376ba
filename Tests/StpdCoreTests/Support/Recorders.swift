import StpdCore
import Synchronization

/// An `EventSink` that records, in call order, what the subscription hands it. It can refuse
/// `offer`s after a budget (a subscriber that cannot keep up) and hold the replay of one event
/// in `room` on a gate (a subscriber slow during replay), so tests can commit events while
/// replay is blocked.
final class RecordingSink: EventSink {
    enum Entry: Equatable, Sendable {
        /// Handed over by `offer` (live delivery) and accepted.
        case offered(Int64)
        /// Handed over while replaying (`room`, then `offer`) and accepted.
        case sent(Int64)
        case dropped(resumeSince: Int64)
    }

    private struct State {
        var entries: [Entry] = []
        var offersLeft: Int?
        var dropReasons: [DropReason] = []
        /// The event `room` was last asked about: its `offer` is the replay's.
        var replaying: Int64?
    }

    private let state: Mutex<State>
    private let roomGate: (seq: Int64, gate: Gate)?

    /// - Parameters:
    ///   - acceptOffers: how many live `offer`s succeed before the sink starts refusing (nil: all).
    ///   - holdSendOf: `room` for the event with this seq waits for the gate to open.
    init(acceptOffers: Int? = nil, holdSendOf: (seq: Int64, gate: Gate)? = nil) {
        state = Mutex(State(offersLeft: acceptOffers))
        roomGate = holdSendOf
    }

    var entries: [Entry] { state.withLock { $0.entries } }
    var dropReasons: [DropReason] { state.withLock { $0.dropReasons } }

    /// Seqs of every event handed over, by either path, in order.
    var deliveredSeqs: [Int64] {
        entries.compactMap {
            switch $0 {
            case .offered(let seq), .sent(let seq): seq
            case .dropped: nil
            }
        }
    }

    var drops: [Int64] {
        entries.compactMap { if case .dropped(let since) = $0 { since } else { nil } }
    }

    func offer(_ event: Event, subscription: String) -> Bool {
        state.withLock { s in
            if s.replaying == event.seq {
                s.replaying = nil
                s.entries.append(.sent(event.seq))
                return true
            }
            if let left = s.offersLeft {
                guard left > 0 else { return false }
                s.offersLeft = left - 1
            }
            s.entries.append(.offered(event.seq))
            return true
        }
    }

    func room(for event: Event, subscription: String) async -> Bool {
        if let roomGate, roomGate.seq == event.seq { await roomGate.gate.wait() }
        state.withLock { $0.replaying = event.seq }
        return true
    }

    func dropped(subscription: String, resumeSince: Int64, reason: DropReason) {
        state.withLock {
            $0.entries.append(.dropped(resumeSince: resumeSince))
            $0.dropReasons.append(reason)
        }
    }
}

/// An `EventListener` for bus tests: records seqs, and asks to be removed after `keep` events.
final class RecordingListener: EventListener {
    private let received = Mutex<[Int64]>([])
    private let keep: Int?
    /// Files it on the bus; every event it is offered is recorded, wanted or not.
    let routing: EventFilter?

    init(keep: Int? = nil, routing: EventFilter? = nil) {
        self.keep = keep
        self.routing = routing
    }

    var seqs: [Int64] { received.withLock { $0 } }

    func receive(_ event: Event) -> Bool {
        received.withLock { seqs in
            seqs.append(event.seq)
            return keep.map { seqs.count < $0 } ?? true
        }
    }
}

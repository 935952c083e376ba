import Foundation
import JSONRPC
import Synchronization

/// The bytes a client can make the log hold or produce (settings STPD_MAX_OBJECT_BYTES and
/// STPD_MAX_PAGE_BYTES), measured as compact JSON (`JSONText.size`).
public struct ByteLimits: Sendable, Hashable {
    /// An object's stored state, and the object an event carries.
    public var objectBytes = 64 << 10
    /// A page of events (`events.wait`, a subscription's replay) or of objects (a list).
    public var pageBytes = 1 << 20

    public static let objectBytesRange = (4 << 10)...(16 << 20)
    public static let pageBytesRange = (16 << 10)...(64 << 20)

    public init() {}
}

/// A change would store more than `ByteLimits.objectBytes`; nothing of its transaction was written.
public struct ObjectTooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    public var objectId: String
    public var kind: String
    public var bytes: Int
    public var limit: Int

    public init(objectId: String, kind: String, bytes: Int, limit: Int) {
        self.objectId = objectId
        self.kind = kind
        self.bytes = bytes
        self.limit = limit
    }

    public var description: String {
        "\(kind) \(objectId) would hold \(bytes) bytes of state; at most \(limit) are stored"
    }
}

/// Holds room in the caller's output for what a read returns, before it is read: the daemon
/// holds that many bytes of the connection's outbound budget (waiting while a client that does
/// not read has spent it), so no page is read for a reply there is no room for. `hold` is false
/// once the caller is gone.
public struct OutputRoom: Sendable {
    public var hold: @Sendable (Int) async -> Bool
    public var giveBack: @Sendable (Int) -> Void

    public init(hold: @escaping @Sendable (Int) async -> Bool, giveBack: @escaping @Sendable (Int) -> Void) {
        self.hold = hold
        self.giveBack = giveBack
    }

    public static let unbounded = OutputRoom(hold: { _ in true }, giveBack: { _ in })
}

public enum EventLogError: Error, Equatable {
    /// Events after `since` were pruned; the oldest still kept is `oldestKept`.
    case cursorExpired(oldestKept: Int64)
    /// `since` is past the last event ever appended (state from another daemon?).
    case cursorAhead(latestSeq: Int64)
}

/// The event log as the domain uses it: every state change goes through `apply`, which
/// commits it with its event and then publishes the event to live readers.
public final class EventLog: Sendable {
    public let store: any StateStore
    public let bus: EventBus
    public let retention: EventRetention
    public let limits: ByteLimits
    /// Other processes append to the store too (a fleet on one database): the seqs before this
    /// process's own events may be theirs, so they are read from the store to be published.
    public let shared: Bool
    /// What clients see of the objects, their events' public state and failures (the daemon's
    /// port: see `RecordViews` and `Failure`).
    public let views: any RecordViews
    public var failures: any FailureRenderer { views }
    private let now: @Sendable () -> Date
    /// Told how many events each commit appended (the daemon counts them for `daemon.metrics`).
    private let appended: @Sendable (Int) -> Void
    /// Yields once `retention.pruneEvery` events were appended since the last prune (yields
    /// that nobody took yet coalesce): the daemon prunes on it, between its hourly prunes.
    public let pruneDue: AsyncStream<Void>
    private let pruneDueSink: AsyncStream<Void>.Continuation
    private let appendedSincePrune = Atomic<Int>(0)
    /// The bus knows where the log ends (see `init(awaiting:)`).
    private let started: Atomic<Bool>

    public init(
        store: any StateStore, views: any RecordViews, retention: EventRetention = EventRetention(),
        limits: ByteLimits = ByteLimits(), shared: Bool = false, now: @escaping @Sendable () -> Date = Date.init,
        appended: @escaping @Sendable (Int) -> Void = { _ in }
    )
        async throws
    {
        self.store = store
        self.views = views
        self.retention = retention
        self.limits = limits
        self.shared = shared
        self.now = now
        self.appended = appended
        (pruneDue, pruneDueSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        bus = EventBus(lastPublished: try await store.eventBounds().latestSeq)
        started = Atomic(true)
    }

    /// A fleet's log, whose database may be unreachable when the daemon starts: nothing is read
    /// until `start(after:)` says where the log ends. Until then subscribing fails as
    /// StoreUnavailable (a live subscription would not know where "live" begins).
    public init(
        awaiting store: any StateStore, views: any RecordViews, retention: EventRetention = EventRetention(),
        limits: ByteLimits = ByteLimits(), now: @escaping @Sendable () -> Date = Date.init,
        appended: @escaping @Sendable (Int) -> Void = { _ in }
    ) {
        self.store = store
        self.views = views
        self.retention = retention
        self.limits = limits
        shared = true
        self.now = now
        self.appended = appended
        (pruneDue, pruneDueSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        bus = EventBus(lastPublished: 0)
        started = Atomic(false)
    }

    /// The log ends at `latestSeq`: live delivery starts after it.
    public func start(after latestSeq: Int64) {
        bus.skip(through: latestSeq)
        started.store(true, ordering: .releasing)
    }

    public var isStarted: Bool { started.load(ordering: .acquiring) }

    /// Commits the changes (none if one of them is larger than `limits.objectBytes`: ObjectTooLarge).
    @discardableResult
    public func apply(_ changes: [StateChange]) async throws -> [Event] {
        for change in changes {
            let bytes = max(JSONText.size(change.object.state), JSONText.size(change.eventObject))
            guard bytes <= limits.objectBytes else {
                throw ObjectTooLarge(
                    objectId: change.object.id, kind: change.object.kind, bytes: bytes, limit: limits.objectBytes)
            }
        }
        let events = try await store.apply(changes, at: now())
        if !events.isEmpty {
            appended(events.count)
            let since = appendedSincePrune.add(events.count, ordering: .relaxed).newValue
            if since >= retention.pruneEvery, since - events.count < retention.pruneEvery { pruneDueSink.yield() }
        }
        // The bus holds an event back until every earlier seq is out; in a fleet those may be
        // another daemon's, committed before ours (the store hands out seqs in commit order).
        if shared, let first = events.first, first.seq > bus.lastPublished + 1 { try? await catchUp() }
        await bus.publish(events)
        return events
    }

    /// Publishes, in seq order, the committed events this process has not published: those other
    /// daemons on a shared store appended. A fleet's follower calls it when the database says
    /// there is something new, and after a lost connection; a notification is only a hint, the
    /// rows are the truth, so nothing is missed or published twice.
    public func catchUp() async throws {
        while true {
            let last = bus.lastPublished
            let events = try await store.events(after: last, limit: 500)
            guard let first = events.first else { return }
            // Pruned before it was published here (a daemon far behind): nothing can fill the gap.
            if first.seq > last + 1 { bus.skip(through: first.seq - 1) }
            await bus.publish(events)
            if events.count < 500 { return }
        }
    }

    /// Registers a subscription; it receives nothing until `start`. `since` nil: live events only.
    public func subscribe(id: String, since: Int64?, filter: EventFilter, sink: any EventSink, holdLimit: Int = 10_000)
        async throws -> Subscription
    {
        guard isStarted else {
            throw StoreUnavailable(reason: "the database has not been reached since this daemon started")
        }
        if let since { try await checkCursor(since) }
        // Without `since`, the feed starts at whatever was published when it was added: live only.
        return bus.add(id: id) { lastPublished in
            Subscription(
                id: id, filter: filter, sink: sink, startAfter: since ?? lastPublished, joinedAfter: lastPublished,
                holdLimit: holdLimit, pageBytes: limits.pageBytes)
        }
    }

    /// Replays history and switches to live delivery; call it after the subscribe reply went out.
    public func start(_ subscription: Subscription) async {
        do {
            try await subscription.run(store: store)
        } catch {
            subscription.close()
            bus.remove(id: subscription.id)
        }
    }

    /// Ends a subscription: once this returns, nothing more reaches its sink. Returns the last
    /// `seq` it delivered (nil if it was not on the bus).
    @discardableResult
    public func unsubscribe(id: String) -> Int64? {
        (bus.remove(id: id) as? Subscription)?.close()
    }

    public struct WaitResult: Sendable {
        public var events: [Event]
        /// Pass as `since` next time: everything up to here has been looked at.
        public var next: Int64
        /// The page ended at `limit` or at `limits.pageBytes`: more events may follow `next` at once.
        public var endedEarly: Bool
    }

    /// Matching events after `since`, at most `limit` and about `limits.pageBytes` of them; if
    /// there are none yet, waits up to `timeout` for one. Room for each page read is held in
    /// `room` first, and given back when the page is empty. Ends early, with what it has, when its
    /// task is cancelled (the caller hung up).
    public func wait(
        since: Int64, filter: EventFilter, limit: Int, timeout: Duration,
        clock: any Clock<Duration> = ContinuousClock(),
        room: OutputRoom = .unbounded
    ) async throws -> WaitResult {
        try await checkCursor(since)
        let waiter = Waiter(filter: filter)
        let waiterID = "wait-\(UUID().uuidString)"
        bus.add(id: waiterID) { _ in waiter }
        defer { bus.remove(id: waiterID) }
        let first = try await collect(after: since, filter: filter, limit: limit, room: room)
        if !first.events.isEmpty || timeout <= .zero || Task.isCancelled { return first }
        room.giveBack(limits.pageBytes)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await waiter.fired() }
            group.addTask { try? await clock.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        if Task.isCancelled { return first }
        return try await collect(after: first.next, filter: filter, limit: limit, room: room)
    }

    /// One filtered read: the store skips, in SQL, what the filter rules out (others' events).
    /// A caller gone meanwhile gets CancellationError.
    private func collect(after since: Int64, filter: EventFilter, limit: Int, room: OutputRoom) async throws
        -> WaitResult
    {
        guard await room.hold(limits.pageBytes) else { throw CancellationError() }
        let page = try await store.events(after: since, matching: filter, limit: limit, maxBytes: limits.pageBytes)
        // Pruning may have run since the cursor was checked: never skip over the hole.
        if since < page.bounds.prunedThrough {
            throw EventLogError.cursorExpired(oldestKept: page.bounds.oldestKept)
        }
        return WaitResult(events: page.events, next: page.through, endedEarly: page.endedEarly)
    }

    public func checkCursor(_ since: Int64) async throws {
        let bounds = try await store.eventBounds()
        if since < bounds.prunedThrough { throw EventLogError.cursorExpired(oldestKept: bounds.oldestKept) }
        if since > bounds.latestSeq { throw EventLogError.cursorAhead(latestSeq: bounds.latestSeq) }
    }

    @discardableResult
    public func prune() async throws -> Int {
        appendedSincePrune.store(0, ordering: .relaxed)
        return try await store.prune(retention, now: now())
    }
}

/// Resumes once a matching event is published (or its task is cancelled).
final class Waiter: EventListener, Sendable {
    let filter: EventFilter
    var routing: EventFilter? { filter }
    private let state = Mutex<(fired: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))

    init(filter: EventFilter) { self.filter = filter }

    func receive(_ event: Event) -> Bool {
        guard filter.matches(event) else { return true }
        let continuation = state.withLock { s in
            s.fired = true
            defer { s.continuation = nil }
            return s.continuation
        }
        continuation?.resume()
        return false
    }

    func fired() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { c in
                let resumeNow = state.withLock { s in
                    // Already cancelled: the cancellation handler ran before there was anything to resume.
                    if s.fired || Task.isCancelled { return true }
                    s.continuation = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            state.withLock { s in
                defer { s.continuation = nil }
                return s.continuation
            }?.resume()
        }
    }
}

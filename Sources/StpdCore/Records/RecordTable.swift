import Foundation
import JSONRPC
import StpdValues

/// The durable-record core: one per kind of object, the only way the domain reads and writes
/// its objects (Hummingbird's one `PersistDriver` for every Codable type is the model).
///
/// The store is the truth; nothing is cached here. Its invariants:
/// - **No lost update.** `update` computes every change from the latest committed state and
///   commits it only if the object is still at the version it read (`StoreConflict` otherwise,
///   and the change is computed again from the newer state). An operation that awaited I/O
///   therefore re-applies its result to whatever is current, or refuses because the state moved
///   on; a stale copy is never written back. This holds between processes sharing a database too.
/// - **Every change is an event.** A mutation that returns no event leaves the object as it was;
///   one that returns an event commits the state and the event in one transaction.
/// - **Terminal is terminal.** A record that `isTerminal` refuses every change that would
///   announce an event (InvalidState), so a closed or cancelled object never comes back to life.
/// - **Ownership in one place.** Every read and write for a `Caller` answers another uid's id
///   exactly like an id that does not exist.
/// - **One bad row stops nothing.** A row that does not decode is set aside (reported once) and
///   is from then on as absent.
///
/// Mutations are plain synchronous closures `(inout R) throws -> R.Event?`: they may run more
/// than once (after a conflict), so they must only compute from the record they are given.
public final class RecordTable<R: DurableRecord>: Sendable {
    public let log: EventLog
    private let now: @Sendable () -> Date
    private let reportSetAside: SetAsideReporter

    public init(
        log: EventLog, now: @escaping @Sendable () -> Date = Date.init,
        reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        self.log = log
        self.now = now
        self.reportSetAside = reportSetAside
    }

    private var store: any StateStore { log.store }

    /// The record after a mutation and the event it committed (nil: nothing changed); `before`
    /// is the state the mutation was applied to.
    public struct Change: Sendable {
        public var record: R
        public var event: R.Event?
        public var before: R
        let failures: any FailureRenderer
        /// The edge's view the event was encoded from (`PublicState.view`).
        let shownView: (any Sendable)?

        /// The record with the view its event carried, for the edge's reply.
        public var shown: Shown<R> { Shown(record, view: shownView) }
    }

    public struct Page: Sendable {
        public var records: [R]
        public var hasMore: Bool
    }

    // MARK: Writing

    /// Stores a new record with its first event; returns it with the view the event carried.
    @discardableResult
    public func insert(_ record: R, _ event: R.Event) async throws -> Shown<R> {
        let state = try record.shown(log.views)
        try await commit([try change(record, event, .absent, state: state)])
        return Shown(record, view: state.view)
    }

    /// Stores `record` with `event` whatever was there: only for kinds whose new state never
    /// depends on the old (the last write is the truth).
    @discardableResult
    public func put(_ record: R, _ event: R.Event) async throws -> R {
        try await commit([try change(record, event, .none)])
        return record
    }

    /// Applies `mutate` to the latest state of the caller's record `id` and commits the result
    /// with the event it returns. Throws `DomainError.notFound` when the caller may not see it.
    @discardableResult
    public func update(_ id: String, for caller: Caller, _ mutate: (inout R) throws -> R.Event?) async throws
        -> Change
    {
        while true {
            guard let (current, version) = try await load(id, owner: caller.ownerFilter) else {
                throw DomainError.notFound(R.kind, id: id)
            }
            var record = current
            guard let event = try mutate(&record) else {
                return Change(record: current, event: nil, before: current, failures: log.failures, shownView: nil)
            }
            if current.isTerminal {
                let state = current.queryStatus ?? "finished"
                throw DomainError.invalidState(R.kind, id: id, state: state, detail: "\(R.kind.noun) \(id) is \(state)")
            }
            record.updatedAt = now()
            do {
                let state = try record.shown(log.views)
                try await commit([try change(record, event, .version(version), state: state)])
                return Change(
                    record: record, event: event, before: current, failures: log.failures, shownView: state.view)
            } catch is StoreConflict {
                continue  // Someone committed first: compute again from what they committed.
            }
        }
    }

    /// `update` for each of `ids`, up to `width` at a time, so their commits share transactions
    /// (group commit) instead of waiting for one another: what pauses or resumes thousands of
    /// polls at once. `committed` sees each change as soon as it is in; the changes come back in
    /// the order of `ids`.
    public func updateEach(
        _ ids: [String], for caller: Caller, width: Int = 32,
        committed: @escaping @Sendable (Change) -> Void = { _ in },
        _ mutate: @escaping @Sendable (inout R) throws -> R.Event?
    ) async throws -> [Change] {
        try await withThrowingTaskGroup(of: (Int, Change).self) { group in
            var changes = [Change?](repeating: nil, count: ids.count)
            for (index, id) in ids.enumerated() {
                if index >= width, let (done, change) = try await group.next() { changes[done] = change }
                group.addTask {
                    let change = try await self.update(id, for: caller, mutate)
                    committed(change)
                    return (index, change)
                }
            }
            for try await (done, change) in group { changes[done] = change }
            return changes.compactMap { $0 }
        }
    }

    /// Removes every finished record last changed before `cutoff`, each announced by the kind's
    /// `removed` event carrying its last state. Returns how many were removed.
    public func sweep(before cutoff: Date) async throws -> Int {
        guard let removed = R.removed else { return 0 }
        var count = 0
        while true {
            let batch = try await decoded(ObjectQuery(kind: R.kind.rawValue, finishedBefore: cutoff, limit: 200))
            guard !batch.isEmpty else { return count }
            let changes = try batch.map { try change($0.record, removed, .version($0.version), removing: true) }
            do {
                try await commit(changes)
                count += changes.count
            } catch is StoreConflict {
                // One of them changed meanwhile: remove the others one by one.
                var removed = 0
                for change in changes where (try? await commit([change])) != nil { removed += 1 }
                count += removed
                if removed == 0 { return count }  // Nothing could go: the next batch would be this one.
            }
        }
    }

    /// Commits in a task of its own: once the I/O an operation did has succeeded, recording it
    /// must not be undone by the caller's cancellation (a client hanging up).
    private func commit(_ changes: [StateChange]) async throws {
        let log = log
        _ = try await Task { try await log.apply(changes) }.value
    }

    /// `state`: the record's public state when the caller built it already (to keep its view).
    private func change(
        _ record: R, _ event: R.Event, _ precondition: StateChange.Precondition, removing: Bool = false,
        state: PublicState? = nil
    ) throws -> StateChange {
        let object = StoredObject(
            id: record.id, kind: R.kind.rawValue, ownerUID: record.owner, state: try StoredForm.state(of: record),
            createdAt: record.createdAt, updatedAt: record.updatedAt, status: record.queryStatus,
            live: record.isLive, finished: record.isFinished)
        return StateChange(
            object: object, eventType: event.type, removesObject: removing,
            publicState: try state?.json ?? record.publicState(log.views), precondition: precondition,
            keys: removing ? [] : record.lookupKeys)
    }

    // MARK: Reading

    /// What clients see of `record` (replies and events carry it), for a kind whose view is the domain's own.
    public func view(_ record: R) -> R.View where R: ViewedInDomain { record.view(log.failures) }

    /// The record, whoever owns it (the daemon's own work).
    public func find(_ id: String) async throws -> R? { try await load(id)?.record }

    /// The caller's record, or nil (another uid's as a missing one, at the same cost: see `get`).
    public func find(_ id: String, for caller: Caller) async throws -> R? {
        try await load(id, owner: caller.ownerFilter)?.record
    }

    /// The caller's record; another uid's answers `notFound` like a missing one, at the same cost
    /// (the store checks the owner before it unseals or decodes anything).
    public func get(_ id: String, for caller: Caller) async throws -> R {
        guard let record = try await find(id, for: caller) else {
            throw DomainError.notFound(R.kind, id: id)
        }
        return record
    }

    /// One page of the caller's records in creation order, after `startingAfter` (an id of theirs):
    /// at most `limit`, and no more once they hold `log.limits.pageBytes` (`hasMore` then, even if
    /// the last one read happens to be the last there is).
    public func page(for caller: Caller, status: String? = nil, startingAfter: String? = nil, limit: Int)
        async throws -> Page
    {
        if let startingAfter { _ = try await get(startingAfter, for: caller) }
        let query = ObjectQuery(
            kind: R.kind.rawValue, owner: caller.ownerFilter, status: status, startingAfter: startingAfter,
            limit: limit + 1, maxBytes: log.limits.pageBytes)
        let stored = try await store.objects(query)
        var bytes = PageBytes(budget: log.limits.pageBytes)
        for object in stored.prefix(limit) { bytes.add(object.state) }
        let records = stored.prefix(limit).compactMap(decodeOrSetAside)
        return Page(records: records, hasMore: stored.count > limit || bytes.isFull)
    }

    /// Every record of the caller's with `status` (for operations over all of them).
    public func all(for caller: Caller, status: String? = nil) async throws -> [R] {
        try await scan(ObjectQuery(kind: R.kind.rawValue, owner: caller.ownerFilter, status: status))
    }

    /// The caller's live records (see `DurableRecord.isLive`).
    public func live(for caller: Caller) async throws -> [R] {
        try await scan(ObjectQuery(kind: R.kind.rawValue, owner: caller.ownerFilter, live: true))
    }

    private func scan(_ query: ObjectQuery) async throws -> [R] {
        var records: [R] = []
        var query = query
        query.limit = 500
        while true {
            let batch = try await store.objects(query)
            records += batch.compactMap(decodeOrSetAside)
            guard batch.count == 500 else { return records }
            query.startingAfter = batch.last?.id
        }
    }

    /// Every live record, whoever owns it: what a process picks up at start.
    public func restore() async throws -> [R] { try await live(for: .daemon) }

    // MARK: Lookup keys

    /// The caller's records filed under `key`, in the order they were filed.
    public func filed(under key: String, for caller: Caller) async throws -> [R] {
        var records: [R] = []
        var after: KeyHit?
        while true {
            let hits = try await store.lookup(key: key, owner: caller.ownerFilter, after: after, limit: 200)
            for hit in hits { if let record = try await find(hit.objectId) { records.append(record) } }
            guard hits.count == 200 else { return records }
            after = hits.last
        }
    }

    /// The first record, in filing order across all of `keys`, that `accept` takes.
    public func firstFiled(under keys: [String], for caller: Caller, where accept: (R) -> Bool) async throws -> R? {
        var cursors = try await withThrowingTaskGroup(of: KeyCursor.self) { group in
            for key in Set(keys) { group.addTask { try await KeyCursor(key, self.store, owner: caller.ownerFilter) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        while let best = cursors.indices.filter({ cursors[$0].head != nil }).min(by: {
            cursors[$0].head! < cursors[$1].head!
        }) {
            let hit = cursors[best].head!
            try await cursors[best].advance(store)
            if let record = try await find(hit.objectId), accept(record) { return record }
        }
        return nil
    }

    /// How many records are filed under `key`, counting no further than `cap`.
    public func count(filedUnder key: String, cap: Int) async throws -> Int {
        try await store.keyCount(key: key, cap: cap)
    }

    // MARK: Decoding

    private func load(_ id: String, owner: UInt32? = nil) async throws -> (record: R, version: Int64)? {
        guard let stored = try await store.object(id: id, owner: owner), stored.kind == R.kind.rawValue,
            let record = decodeOrSetAside(stored)
        else { return nil }
        return (record, stored.version)
    }

    private func decoded(_ query: ObjectQuery) async throws -> [(record: R, version: Int64)] {
        try await store.objects(query).compactMap { stored in decodeOrSetAside(stored).map { ($0, stored.version) } }
    }

    private func decodeOrSetAside(_ stored: StoredObject) -> R? {
        do {
            return try StoredForm.record(R.self, from: stored.state)
        } catch is StoredForm.Newer {
            return nil  // A newer stpd's row: left for it (a fleet being upgraded), never set aside.
        } catch {
            let reason = String(describing: error)
            reportSetAside(R.kind, stored.id, reason)
            let store = store
            Task { try? await store.setAside(id: stored.id, reason: reason) }
            return nil
        }
    }
}

extension RecordTable.Change where R: ViewedInDomain {
    /// What clients see of the record.
    public var view: R.View { record.view(failures) }
}

/// Told when a row that does not decode is set aside: its kind, id and the decoding error.
public typealias SetAsideReporter = @Sendable (_ kind: ObjectKind, _ id: String, _ error: String) -> Void

/// One key's hits in filing order, fetched a page at a time.
private struct KeyCursor: Sendable {
    let key: String
    let owner: UInt32?
    private var page: [KeyHit]
    private var index = 0

    init(_ key: String, _ store: any StateStore, owner: UInt32?) async throws {
        self.key = key
        self.owner = owner
        page = try await store.lookup(key: key, owner: owner, after: nil, limit: Self.pageSize)
    }

    static let pageSize = 32

    var head: KeyHit? { index < page.count ? page[index] : nil }

    mutating func advance(_ store: any StateStore) async throws {
        index += 1
        guard index == page.count, page.count == Self.pageSize else { return }
        page = try await store.lookup(key: key, owner: owner, after: page.last, limit: Self.pageSize)
        index = 0
    }
}

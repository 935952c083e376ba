import Foundation
import JSONRPC
import StripeAPI
import Synchronization

/// Told when a poll that follows up a redirect session ends.
public protocol PollFollower: Sendable {
    func pollFinished(redirect: String, source: JSONValue?, error: Failure?) async
}

/// Sources stpd created or retrieved, and their durable polls (the SDK's STPSourcePoller registry:
/// one poll per source, a new one replaces the old silently, a stopped one never reports).
/// The record core keeps the records; this service owns the running pollers. Each poll has an id,
/// and a poller's results are applied only while its poll is the record's current, running one,
/// so a replaced, stopped or paused poll can never write. A poll is leased work (`poll:<poll id>`):
/// it runs on one daemon of a fleet, and stopping, replacing or pausing it on any daemon stops it
/// where it runs.
public final class SourceService: Sendable {
    private let api: any PaymentsAPI
    let table: RecordTable<SourceRecord>
    private let timers: TimerQueue
    private let now: @Sendable () -> Date
    private let pollers = Mutex<[String: SourcePoller]>([:])
    private let follower = Mutex<(any PollFollower)?>(nil)
    private let work: LeasedWork
    /// How many polls each user runs, and how fast they send (shared with the intents' polls).
    private let budget: PollBudget

    public init(
        api: any PaymentsAPI, log: EventLog, background: BackgroundWork, clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = Date.init, work: LeasedWork? = nil, budget: PollBudget = PollBudget(),
        reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        self.api = api
        self.budget = budget
        self.work = work ?? LeasedWork(background: background)
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        timers = TimerQueue(clock: clock)
        self.now = now
        // Running polls resume from their stored start and deadline, wherever their lease is free.
        self.work.adopt { [self] in
            try await table.live(for: .daemon).compactMap { record in record.poll.map { pollJob(record.id, $0.id) } }
        }
    }

    /// Polls running in this process now (paused and finished ones hold no poller).
    public var pollsRunning: Int { pollers.withLock { $0.count } }

    public func follow(with follower: any PollFollower) { self.follower.withLock { $0 = follower } }

    public func create(for caller: Caller, params: [String: JSONValue], loopback: LoopbackReturn? = nil) async throws
        -> (Shown<SourceRecord>, String?)
    {
        let source = try await api.createSource(params)
        var created = SourceRecord(source: source, owner: caller.uid, clientSecret: nil, at: now())
        created.loopback = loopback
        return (try await table.insert(created, .created), source.clientSecret)
    }

    /// Fetches the Source with its client secret and remembers it (first seen: `source.retrieved`;
    /// changed since: `source.updated`). Another uid's Source answers as Stripe answers an unknown
    /// id, and only after Stripe answered, so neither the answer nor the time taken tells that
    /// another user holds it here.
    public func retrieve(id: String, clientSecret: String, for caller: Caller) async throws -> (
        Shown<SourceRecord>, Source
    ) {
        let source = try await api.retrieveSource(id: id, clientSecret: clientSecret)
        if let known = try await table.find(id), !caller.sees(known.owner) {
            throw StripeError.noSuchObject(.source, id: id)
        }
        let fresh = source.allResponseFields.withoutClientSecret
        do {
            let change = try await table.update(id, for: caller) { record in
                guard record.source != fresh || record.clientSecret != clientSecret else { return nil }
                record.source = fresh
                record.clientSecret = clientSecret
                return .updated
            }
            return (change.shown, source)
        } catch DomainError.notFound {
            let record = SourceRecord(source: source, owner: caller.uid, clientSecret: clientSecret, at: now())
            do {
                return (try await table.insert(record, .retrieved), source)
            } catch is StoreConflict {
                // Another call recorded it first: this one is then an update.
                return try await retrieve(id: id, clientSecret: clientSecret, for: caller)
            }
        }
    }

    public func get(id: String, for caller: Caller) async throws -> SourceRecord {
        try await table.get(id, for: caller)
    }

    public func list(for caller: Caller, status: String?, startingAfter: String?, limit: Int) async throws
        -> ([SourceRecord], hasMore: Bool)
    {
        let page = try await table.page(for: caller, status: status, startingAfter: startingAfter, limit: limit)
        return (page.records, page.hasMore)
    }

    /// The client secret stpd holds for a Source the caller may see.
    public func clientSecret(id: String, for caller: Caller) async throws -> String? {
        try await table.find(id, for: caller)?.clientSecret
    }

    /// Starts (or replaces) the Source's poll. `redirect`: the session it follows up.
    public func startPoll(
        id: String, for caller: Caller, clientSecret: String?, timeout: Double?, redirect: String? = nil
    ) async throws -> Shown<SourceRecord> {
        let known = try await table.get(id, for: caller)
        guard let secret = clientSecret ?? known.clientSecret else {
            throw DomainError.invalidInput(input: "clientSecret", detail: "stpd holds no client secret for \(id)")
        }
        let poll = SourceRecord.Poll(
            id: ObjectID.make("poll_"), status: .polling,
            progress: PollProgress(startedAt: now(), requestedTimeout: timeout ?? SourcePoller.maxTimeout),
            redirect: redirect)
        var replaced: String?
        try budget.admit(uid: known.owner, object: id, pollID: poll.id ?? id)
        let change: RecordTable<SourceRecord>.Change
        do {
            change = try await table.update(id, for: caller) { record in
                replaced = record.poll.flatMap { $0.isRunningOrPaused ? $0.id : nil }
                record.clientSecret = secret
                record.poll = poll
                return .pollStarted
            }
        } catch {
            budget.leave(pollID: poll.id ?? id)
            throw error
        }
        if let replaced { await work.stop(Self.lease(id, replaced)) }
        launch(change.record)
        return change.shown
    }

    public func stopPoll(id: String, for caller: Caller) async throws -> Shown<SourceRecord> {
        let change = try await table.update(id, for: caller) { record in
            guard let status = record.poll?.status, status == .polling || status == .paused else { return nil }
            record.poll?.status = .stopped
            return .pollStopped
        }
        stopPoller(id)
        if change.event != nil, let poll = change.record.poll { await work.stop(Self.lease(id, poll.id)) }
        return change.shown
    }

    /// app.background: pauses the caller's running polls; returns their source ids.
    public func pauseAll(for caller: Caller) async throws -> [String] {
        let running = try await table.live(for: caller).map(\.id)
        let changes = try await table.updateEach(
            running, for: caller,
            committed: { [self] change in
                // The SDK's pause: a request in flight is not cancelled, and its response still counts.
                if change.event != nil { pollers.withLock { $0[change.record.id] }?.pause() }
            }
        ) { record in
            guard record.poll?.status == .polling else { return nil }
            record.poll?.status = .paused
            return .pollPaused
        }
        let paused = changes.filter { $0.event != nil }
        // Polls another daemon of the fleet runs stop there.
        for change in paused where pollers.withLock({ $0[change.record.id] }) == nil {
            if let poll = change.record.poll { await work.stop(Self.lease(change.record.id, poll.id)) }
        }
        return paused.map(\.record.id)
    }

    /// app.foreground: resumes the caller's paused polls as the SDK restarts a poller: nothing is
    /// sent while a request is in flight (its response schedules the next poll); otherwise the
    /// timeout check runs first, then a poll goes out at once.
    public func resumeAll(for caller: Caller) async throws -> [String] {
        let paused = try await table.filed(under: SourceRecord.pausedKey, for: caller).map(\.id)
        let changes = try await table.updateEach(
            paused, for: caller, committed: { [self] change in if change.event != nil { resume(change.record) } }
        ) { record in
            guard record.poll?.status == .paused else { return nil }
            record.poll?.status = .polling
            return .pollResumed
        }
        return changes.filter { $0.event != nil }.map(\.record.id)
    }

    static func lease(_ id: String, _ pollID: String?) -> String { "poll:\(pollID ?? id)" }

    /// Runs a poller for the record's running poll, under its lease.
    private func launch(_ record: SourceRecord, restart: Bool = false) {
        guard let poll = record.poll, poll.status == .polling else { return }
        let job = pollJob(record.id, poll.id, restart: restart)
        work.start(job.name, job.run)
    }

    /// Polls the source's poll `pollID` from its stored progress, if it still runs when the
    /// lease is taken (it may have been stopped anywhere meanwhile).
    private func pollJob(_ id: String, _ pollID: String?, restart: Bool = false) -> LeasedWork.Job {
        LeasedWork.Job(name: Self.lease(id, pollID)) { [self, api, timers, now, budget] in
            defer { budget.leave(pollID: pollID ?? id) }
            guard let record = try? await table.find(id), let poll = record.poll, poll.id == pollID,
                poll.status == .polling, let secret = record.clientSecret
            else { return }
            // Counted for its user (again after a restart), and sent at the user's pace.
            let owner = record.owner
            budget.enter(uid: owner, object: id, pollID: pollID ?? id)
            let poller = SourcePoller(
                sourceID: id, clientSecret: secret, progress: poll.progress, timers: timers, now: now,
                fetch: { id, secret in
                    await budget.turn(uid: owner)
                    return await api.pollSource(id: id, clientSecret: secret)
                })
            pollers.withLock { $0.updateValue(poller, forKey: id) }?.stop()
            await run(poller, id: id, pollID: pollID, restart: restart)
        }
    }

    /// The paused poller, if this process still has it; else a new one from the stored progress.
    private func resume(_ record: SourceRecord) {
        guard let poll = record.poll else { return }
        if let poller = pollers.withLock({ $0[record.id] }) {
            if poller.resume() {
                work.start(Self.lease(record.id, poll.id)) { [self] in
                    budget.enter(uid: record.owner, object: record.id, pollID: poll.id ?? record.id)
                    defer { budget.leave(pollID: poll.id ?? record.id) }
                    await run(poller, id: record.id, pollID: poll.id, restart: true)
                }
            }
        } else {
            launch(record, restart: true)
        }
    }

    private func run(_ poller: SourcePoller, id: String, pollID: String?, restart: Bool) async {
        let seen = SeenProgress(poller.progress)
        let end = await poller.run(restart: restart) { progress in
            // Most responses change nothing a client sees: those cost no store round trip.
            if seen.changes(to: progress) { await self.progressed(id, pollID, progress) }
        }
        // A poller the app paused is kept: app.foreground resumes it. One whose task was cancelled
        // (shutdown, lease lost) resumes from the store.
        if end != .paused || !poller.isPaused { pollers.withLock { if $0[id] === poller { $0[id] = nil } } }
        if case .finished(let source, let error) = end {
            await finished(id, pollID, source, error, poller.progress)
        }
    }

    private func stopPoller(_ id: String) {
        pollers.withLock { $0.removeValue(forKey: id) }?.stop()
    }

    /// Saves progress; an event only when what a client sees changed (status seen, error, retries).
    /// Invisible progress is not written: the poller holds it, and a restart resumes from the
    /// poll's start and deadline, which are stored.
    private func progressed(_ id: String, _ pollID: String?, _ progress: PollProgress) async {
        _ = try? await table.update(id, for: .daemon) { record in
            guard var poll = record.poll, poll.id == pollID, poll.isRunningOrPaused else { return nil }
            let visible = SeenProgress.differ(poll.progress, progress)
            poll.progress = progress
            record.poll = poll
            if let latest = progress.latestSource { record.source = latest.withoutClientSecret }
            return visible ? .polled : nil
        }
    }

    private func finished(
        _ id: String, _ pollID: String?, _ source: JSONValue?, _ error: PollError?, _ progress: PollProgress
    ) async {
        let failure = error.map { Failure.stripe($0.stripeError) }
        let change = try? await table.update(id, for: .daemon) { record in
            guard var poll = record.poll, poll.id == pollID, poll.isRunningOrPaused else { return nil }
            if let source { record.source = source.withoutClientSecret }
            poll.status = .finished
            poll.progress = progress
            poll.sourceStatus = source?["status"]?.stringValue
            poll.error = failure
            record.poll = poll
            return .pollFinished
        }
        guard let change, change.event != nil, let redirect = change.record.poll?.redirect,
            let follower = follower.withLock({ $0 })
        else { return }
        await follower.pollFinished(redirect: redirect, source: change.record.source, error: failure)
    }
}

/// What a poll's client sees of its progress (the source status, retries, the error), as last
/// recorded: the poller's record callback tells from it whether a response changed anything.
private final class SeenProgress: Sendable {
    private let last: Mutex<PollProgress>

    init(_ progress: PollProgress) { last = Mutex(progress) }

    /// Whether `progress` differs from the last one seen, which it then becomes.
    func changes(to progress: PollProgress) -> Bool {
        last.withLock { last in
            defer { last = progress }
            return Self.differ(last, progress)
        }
    }

    static func differ(_ old: PollProgress, _ new: PollProgress) -> Bool {
        old.latestSource?["status"] != new.latestSource?["status"] || old.retryCount != new.retryCount
            || old.lastError != new.lastError
    }
}

extension SourceService: Sweepable {
    /// A Source is finished when no poll runs or waits for it.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

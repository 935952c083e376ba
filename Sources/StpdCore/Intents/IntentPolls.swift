import Foundation
import JSONRPC
import StpdValues
import StripeAPI
import Synchronization

/// How an intent's poll ended, as its followers hear it.
public struct IntentPollEnd: Sendable {
    public var kind: IntentKind
    public var id: String
    /// The redirect session it followed up, if any.
    public var redirect: String?
    public var result: IntentResult
    public var error: Failure?
    /// The intent as last read (what clients see of it); nil when it could not be read.
    public var intent: JSONValue?
}

/// Told when an intent's poll ends: a redirect session it followed up, a payment context waiting on it.
public protocol IntentPollFollower: Sendable {
    func intentPollFinished(_ end: IntentPollEnd) async
}

/// The daemon's polls of both kinds of intent.
public struct IntentPollers: Sendable {
    public let paymentIntents: IntentPolls<PaymentIntent>
    public let setupIntents: IntentPolls<SetupIntent>

    public init(
        api: any PaymentsAPI, log: EventLog, background: BackgroundWork, clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = Date.init, work: LeasedWork? = nil, budget: PollBudget = PollBudget(),
        reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        let work = work ?? LeasedWork(background: background)
        let timers = TimerQueue(clock: clock)
        paymentIntents = IntentPolls(
            api: api, log: log, timers: timers, now: now, work: work, budget: budget, reportSetAside: reportSetAside)
        setupIntents = IntentPolls(
            api: api, log: log, timers: timers, now: now, work: work, budget: budget, reportSetAside: reportSetAside)
    }

    public func follow(with follower: any IntentPollFollower) {
        paymentIntents.follow(with: follower)
        setupIntents.follow(with: follower)
    }

    public var pollsRunning: Int { paymentIntents.pollsRunning + setupIntents.pollsRunning }
    public var sweepable: [any Sweepable] { [paymentIntents, setupIntents] }
}

/// The intents stpd polls, as STPPaymentHandler (and PaymentSheet's polling screen) re-reads an
/// intent until its action ends (`IntentRules.step`), made durable: a poll survives a restart with
/// its start and deadline, and announces its end once (`<kind>.finished`). One poll per intent: a
/// new one replaces the old, a stopped one never reports. A poll is leased work
/// (`intentPoll:<poll id>`): it runs on one daemon of a fleet, resumes on another when its holder
/// dies, and stopping or replacing it on any daemon stops it where it runs (its loop also re-reads
/// its record before every request, so it never writes once replaced or stopped). Polls count
/// against their user's `PollBudget`: how many run, and how fast they send.
public final class IntentPolls<Intent: StripeIntent>: Sendable {
    typealias Record = IntentRecord<Intent>

    private let api: any PaymentsAPI
    let table: RecordTable<Record>
    /// Every poll's waits, on one sleeping task (a stopped poll's wait is gone at once).
    private let timers: TimerQueue
    private let now: @Sendable () -> Date
    private let work: LeasedWork
    private let budget: PollBudget
    /// The polls running in this process, by poll id.
    private let running = Mutex<Set<String>>([])
    private let followers = Mutex<[any IntentPollFollower]>([])

    init(
        api: any PaymentsAPI, log: EventLog, timers: TimerQueue, now: @escaping @Sendable () -> Date,
        work: LeasedWork, budget: PollBudget, reportSetAside: @escaping SetAsideReporter
    ) {
        self.api = api
        self.budget = budget
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.timers = timers
        self.now = now
        self.work = work
        // Running polls resume from their stored start and deadline, wherever their lease is free.
        self.work.adopt { [self] in
            try await table.live(for: .daemon).compactMap { record in
                record.poll.flatMap { $0.status == .polling ? pollJob(record.id, $0.id) : nil }
            }
        }
    }

    public var pollsRunning: Int { running.withLock { $0.count } }

    func follow(with follower: any IntentPollFollower) { followers.withLock { $0.append(follower) } }

    /// Starts (or replaces) the poll of intent `id` for `caller`. `intent` is the intent as just
    /// read, when there is one (an awaitCustomer poll's deadline comes from its next action).
    public func start(
        for caller: Caller, id: String, clientSecret: String, intent: Intent?, purpose: IntentPollPurpose,
        entry: IntentEntry, redirect: String? = nil, paymentMethodType: String? = nil, pingURL: String? = nil
    ) async throws -> Shown<IntentRecord<Intent>> {
        let stamp = now()
        let poll = Record.Poll(
            id: ObjectID.make("ipoll_"), status: .polling, purpose: purpose, entry: entry,
            paymentMethodType: intent?.paymentMethodType ?? paymentMethodType, pingURL: pingURL,
            nextActionType: intent?.nextAction?.rawType,
            redirect: redirect, startedAt: stamp,
            deadline: purpose == .awaitCustomer ? IntentRules.deadline(awaiting: intent?.nextAction, from: stamp) : nil)
        let fields = intent?.clientFields
        try budget.admit(uid: caller.uid, object: id, pollID: poll.id)
        var started: Shown<Record>?
        var replaced: String?
        // Counted out again unless the poll is recorded (and so starts).
        defer { if started == nil { budget.leave(pollID: poll.id) } }
        for _ in 0..<2 where started == nil {
            do {
                started =
                    try await table.update(id, for: caller) { record in
                        replaced = record.poll.flatMap { $0.status == .polling ? $0.id : nil }
                        record.clientSecret = clientSecret
                        if let fields { record.intent = fields }
                        record.poll = poll
                        return .pollStarted
                    }
                    .shown
            } catch DomainError.notFound {
                let new = Record(
                    id: id, owner: caller.uid, clientSecret: clientSecret, intent: fields ?? ["id": .string(id)],
                    poll: poll, createdAt: stamp, updatedAt: stamp)
                do {
                    started = try await table.insert(new, .pollStarted)
                } catch is StoreConflict {
                    // Lost to a concurrent start of the same intent: update it the second time round.
                }
            }
        }
        // Another user's record holds this intent: answered as Stripe answers an id it does not
        // know, so that the caller learns nothing of what another user does.
        guard let started else { throw StripeError.noSuchObject(Intent.secretBearer, id: id) }
        if let replaced { await work.stop(Self.lease(replaced)) }
        let job = pollJob(id, poll.id)
        work.start(job.name, job.run)
        return started
    }

    public func get(id: String, for caller: Caller) async throws -> IntentRecord<Intent> {
        try await table.get(id, for: caller)
    }

    public func list(for caller: Caller, status: IntentPollStatus?, startingAfter: String?, limit: Int) async throws
        -> ([IntentRecord<Intent>], hasMore: Bool)
    {
        let page = try await table.page(
            for: caller, status: status?.rawValue, startingAfter: startingAfter, limit: limit)
        return (page.records, page.hasMore)
    }

    /// Stops the poll wherever it runs (here at once, on another daemon within a third of a
    /// lease); it never reports.
    public func stop(id: String, for caller: Caller) async throws -> Shown<IntentRecord<Intent>> {
        let change = try await table.update(id, for: caller) { record in
            guard record.poll?.status == .polling else { return nil }
            record.poll?.status = .stopped
            return .pollStopped
        }
        if change.event != nil, let poll = change.record.poll { await work.stop(Self.lease(poll.id)) }
        return change.shown
    }

    // MARK: Running

    static func lease(_ pollID: String) -> String { "intentPoll:\(pollID)" }

    /// Runs the intent's poll `pollID` from its stored start and deadline, if it still runs when
    /// the lease is taken (it may have been stopped or replaced anywhere meanwhile).
    private func pollJob(_ id: String, _ pollID: String) -> LeasedWork.Job {
        LeasedWork.Job(name: Self.lease(pollID)) { [self] in
            running.withLock { _ = $0.insert(pollID) }
            defer {
                running.withLock { _ = $0.remove(pollID) }
                budget.leave(pollID: pollID)
            }
            await run(id, pollID)
        }
    }

    /// Reads the intent and takes `IntentRules.step` until the poll finishes or its task is
    /// cancelled (shutdown, the lease lost or revoked: the poll stays running in the store, and
    /// whoever takes the lease resumes it). The store being unreachable (a fleet's database) only
    /// delays it: the record is read, and the end written, again at the next turn.
    private func run(_ id: String, _ pollID: String) async {
        var memory = IntentRules.Memory()
        var first = true
        // The payment method's type as last known: it decides whether a read refreshes.
        var paymentMethodType: String?
        while !Task.isCancelled {
            let current: Record?
            do { current = try await table.find(id) } catch {
                guard await pause(seconds: 1) else { return }
                continue
            }
            guard let current, let poll = current.poll, poll.id == pollID, poll.status == .polling else { return }
            // Counted for its user (again after a restart), and sent at the user's pace.
            budget.enter(uid: current.owner, object: id, pollID: pollID)
            // PaymentSheet shows the code for a few seconds before its first read.
            let delay = IntentRules.startDelay(poll.purpose) - now().timeIntervalSince(poll.startedAt)
            if first, delay > 0 {
                first = false
                guard await pause(seconds: delay) else { return }
                continue
            }
            first = false
            paymentMethodType = paymentMethodType ?? poll.paymentMethodType
            await budget.turn(uid: current.owner)
            if Task.isCancelled { return }
            // Alipay: its return URL first, so that the intent is up to date (the SDK's Marlin ping).
            if let ping = poll.pingURL.flatMap(URL.init(string:)) { await api.ping(ping) }
            var intent: Intent?
            var failure: (any Error)?
            do {
                intent = try await Intent.reread(
                    clientSecret: current.clientSecret, paymentMethodType: paymentMethodType, with: api)
                paymentMethodType = intent?.paymentMethodType ?? paymentMethodType
            } catch {
                failure = error
            }
            if Task.isCancelled { return }
            let step = IntentRules.step(
                purpose: poll.purpose, entry: poll.entry ?? .handleNextAction, start: poll.startedAt,
                deadline: poll.deadline, read: intent,
                permanent: failure.map(Self.isPermanent) ?? false, at: now(), memory: &memory)
            let ended: Bool
            switch step {
            case .wait(let seconds):
                guard await pause(seconds: seconds) else { return }
                continue
            case .finish(let result, let error):
                ended = await finish(id, poll.id, result, error.map(Failure.domain), intent)
            case .finishUnread:
                ended = await finish(
                    id, poll.id, .failed, failure.map { Failure($0, describedBy: table.log.failures) }, nil)
            }
            guard !ended, await pause(seconds: 1) else { return }
        }
    }

    /// Waits on the polls' timers; false when the task was cancelled (shutdown, a stop).
    private func pause(seconds: Double) async -> Bool {
        await timers.sleep(for: .seconds(seconds))
    }

    /// A read that failed for a reason retrying cannot change: Stripe refused the request itself.
    private static func isPermanent(_ error: any Error) -> Bool {
        guard let error = error as? StripeError else { return false }
        return [.invalidRequest, .authentication, .card].contains(error.kind)
    }

    /// Records the end and tells the followers once. False when the store could not be written
    /// (the poll goes on and tries again); true when it was, or the poll was replaced or stopped.
    private func finish(_ id: String, _ pollID: String, _ result: IntentResult, _ error: Failure?, _ intent: Intent?)
        async -> Bool
    {
        let change: RecordTable<Record>.Change
        do {
            change = try await table.update(id, for: .daemon) { record in
                guard var poll = record.poll, poll.id == pollID, poll.status == .polling else { return nil }
                if let intent { record.intent = intent.clientFields }
                poll.status = .finished
                poll.result = result
                poll.error = error
                record.poll = poll
                return .finished
            }
        } catch DomainError.notFound {
            return true
        } catch is ObjectTooLarge where intent != nil {
            // The intent as read would not fit: the end is recorded with the intent as last stored.
            return await finish(id, pollID, result, error, nil)
        } catch {
            return false
        }
        guard change.event != nil else { return true }
        let end = IntentPollEnd(
            kind: Intent.kind, id: id, redirect: change.record.poll?.redirect, result: result, error: error,
            intent: intent?.clientFields)
        for follower in followers.withLock({ $0 }) { await follower.intentPollFinished(end) }
        return true
    }
}

extension IntentPolls: Sweepable {
    /// An intent is finished when no poll runs for it.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

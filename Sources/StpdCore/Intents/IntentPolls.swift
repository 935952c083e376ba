import Foundation
import JSONRPC
import StpdProtocol
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
        now: @escaping @Sendable () -> Date = Date.init, leases: any WorkLeases = LocalLeases(),
        reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        paymentIntents = IntentPolls(
            api: api, log: log, background: background, clock: clock, now: now, leases: leases,
            reportSetAside: reportSetAside)
        setupIntents = IntentPolls(
            api: api, log: log, background: background, clock: clock, now: now, leases: leases,
            reportSetAside: reportSetAside)
    }

    public func follow(with follower: any IntentPollFollower) {
        paymentIntents.follow(with: follower)
        setupIntents.follow(with: follower)
    }

    /// Resumes the polls that were running, each from its stored start and deadline.
    public func restore() async throws {
        try await paymentIntents.restore()
        try await setupIntents.restore()
    }

    /// In a fleet: starts the running polls that no poller runs here (see `IntentPolls.adopt`).
    public func adopt() async throws {
        try await paymentIntents.adopt()
        try await setupIntents.adopt()
    }

    public var pollsRunning: Int { paymentIntents.pollsRunning + setupIntents.pollsRunning }
    public var sweepable: [any Sweepable] { [paymentIntents, setupIntents] }
}

/// The intents stpd polls, as STPPaymentHandler (and PaymentSheet's polling screen) re-reads an
/// intent until its action ends (`IntentRules.step`), made durable: a poll survives a restart with
/// its start and deadline, runs once in a fleet under a lease, and announces its end once
/// (`<kind>.finished`). One poll per intent: a new one replaces the old, a stopped one never
/// reports. Each loop re-reads its record before every request, so a poll replaced or stopped on
/// any daemon of the fleet ends at its next turn.
public final class IntentPolls<Intent: StripeIntent>: Sendable {
    typealias Record = IntentRecord<Intent>

    private let api: any PaymentsAPI
    let table: RecordTable<Record>
    private let background: BackgroundWork
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let leases: any WorkLeases
    /// The polls running in this process, by poll id.
    private let running = Mutex<Set<String>>([])
    private let followers = Mutex<[any IntentPollFollower]>([])

    init(
        api: any PaymentsAPI, log: EventLog, background: BackgroundWork, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Date, leases: any WorkLeases, reportSetAside: @escaping SetAsideReporter
    ) {
        self.api = api
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.background = background
        self.clock = clock
        self.now = now
        self.leases = leases
    }

    public var pollsRunning: Int { running.withLock { $0.count } }

    func follow(with follower: any IntentPollFollower) { followers.withLock { $0.append(follower) } }

    func restore() async throws {
        for record in try await table.restore() { launch(record) }
    }

    /// Starts the running polls that no poller runs here: each runs only where its lease is
    /// taken, so this picks up the polls of a daemon that died once their leases expired.
    func adopt() async throws {
        for record in try await table.live(for: .daemon) { launch(record) }
    }

    /// Starts (or replaces) the poll of intent `id` for `caller`. `intent` is the intent as just
    /// read, when there is one (an awaitCustomer poll's deadline comes from its next action).
    public func start(
        for caller: Caller, id: String, clientSecret: String, intent: Intent?, purpose: IntentPollPurpose,
        redirect: String? = nil
    ) async throws -> IntentView {
        let stamp = now()
        let poll = Record.Poll(
            id: ObjectID.make("ipoll_"), status: .polling, purpose: purpose,
            nextActionType: intent?.nextAction?.rawType,
            redirect: redirect, startedAt: stamp,
            deadline: purpose == .awaitCustomer ? IntentRules.deadline(awaiting: intent?.nextAction, from: stamp) : nil)
        let fields = intent?.clientFields
        var record: Record?
        for _ in 0..<2 where record == nil {
            do {
                record =
                    try await table.update(id, for: caller) { record in
                        record.clientSecret = clientSecret
                        if let fields { record.intent = fields }
                        record.poll = poll
                        return .pollStarted
                    }
                    .record
            } catch DomainError.notFound {
                let new = Record(
                    id: id, owner: caller.uid, clientSecret: clientSecret, intent: fields ?? ["id": .string(id)],
                    poll: poll, createdAt: stamp, updatedAt: stamp)
                // Lost to a concurrent start of the same intent: update it the second time round.
                record = try? await table.insert(new, .pollStarted)
            }
        }
        guard let record else {
            throw DomainError.invalidState(
                Record.kind, id: id, state: "polled", detail: "another user's poll holds \(Intent.kind.noun) \(id)")
        }
        launch(record)
        return table.view(record)
    }

    public func get(id: String, for caller: Caller) async throws -> IntentView {
        table.view(try await table.get(id, for: caller))
    }

    public func list(for caller: Caller, status: IntentPollStatus?, startingAfter: String?, limit: Int) async throws
        -> ([IntentView], hasMore: Bool)
    {
        let page = try await table.page(
            for: caller, status: status?.rawValue, startingAfter: startingAfter, limit: limit)
        return (page.records.map(table.view), page.hasMore)
    }

    /// Stops the poll: its loop ends at its next turn, and it never reports.
    public func stop(id: String, for caller: Caller) async throws -> IntentView {
        try await table.update(id, for: caller) { record in
            guard record.poll?.status == .polling else { return nil }
            record.poll?.status = .stopped
            return .pollStopped
        }.view
    }

    // MARK: Running

    private func launch(_ record: Record) {
        guard let poll = record.poll, poll.status == .polling,
            running.withLock({ $0.insert(poll.id).inserted })
        else { return }
        let (id, secret) = (record.id, record.clientSecret)
        background.start { [self] in
            defer { running.withLock { _ = $0.remove(poll.id) } }
            await leased("intentPoll:\(poll.id)") { lost in await run(id, poll, clientSecret: secret, lost: lost) }
        }
    }

    /// The one place intent polls use the fleet's leases: the poll runs only where its lease is
    /// taken, and stops at its next turn if the lease is lost.
    private func leased(_ name: String, _ body: (_ lost: LeaseLost) async -> Void) async {
        let lost = LeaseLost()
        guard await leases.acquire(name, lost: lost.set) else { return }
        await body(lost)
        await leases.release(name)
    }

    /// Reads the intent and takes `IntentRules.step` until the poll finishes. The store being
    /// unreachable (a fleet's database) only delays it: the record is read, and the end written,
    /// again at the next turn.
    private func run(_ id: String, _ poll: Record.Poll, clientSecret: String, lost: LeaseLost) async {
        var memory = IntentRules.Memory()
        while !lost.isSet {
            let current: Record?
            do { current = try await table.find(id) } catch {
                guard await pause(seconds: 1) else { return }
                continue
            }
            guard let current, current.poll?.id == poll.id, current.poll?.status == .polling else { return }
            var intent: Intent?
            var failure: (any Error)?
            do { intent = try await Intent.retrieve(clientSecret: clientSecret, with: api) } catch { failure = error }
            // Shutting down: the poll stays running in the store, and the next start resumes it.
            if Task.isCancelled { return }
            let step = IntentRules.step(
                purpose: poll.purpose, start: poll.startedAt, deadline: poll.deadline, read: intent,
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

    /// Sleeps on the poll's clock; false when the task was cancelled (shutdown).
    private func pause(seconds: Double) async -> Bool {
        do {
            try await clock.sleep(for: .seconds(seconds))
            return true
        } catch {
            return false
        }
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

/// Set when a lease is lost: the work must stop, since another daemon may take it over.
final class LeaseLost: Sendable {
    private let flag = Mutex(false)
    var isSet: Bool { flag.withLock { $0 } }
    @Sendable func set() { flag.withLock { $0 = true } }
}

extension IntentPolls: Sweepable {
    /// An intent is finished when no poll runs for it.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

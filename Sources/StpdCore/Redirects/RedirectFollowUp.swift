import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// Told when a redirect session's follow-up has an outcome (a payment context waiting on it).
public protocol RedirectOutcomeFollower: Sendable {
    func redirectSettled(session: String, outcome: RedirectOutcome) async
}

/// What the seeds tell an app to do once a redirect completes: poll the Source for a short while
/// and show chargeable / consumed / failed / still pending; re-read the PaymentIntent (or
/// SetupIntent) as STPPaymentHandler does (`_retrieveAndCheckIntentForCurrentAction`: a poll with
/// the SDK's short budgets) and show its verdict. The result is the session's `outcome`
/// (`redirect.outcome`). Either follow-up is a durable poll that reports back here.
extension RedirectSessions: PollFollower, IntentPollFollower {
    public func follow(with follower: any RedirectOutcomeFollower) { outcomeFollowers.withLock { $0.append(follower) } }

    func startFollowUp(_ record: RedirectRecord) {
        guard record.awaitsOutcome else { return }
        let job = followUpJob(record.id)
        work.start(job.name, job.run)
    }

    /// Follows the session up if it still awaits its outcome once the lease is taken (leased
    /// work, `followup:<id>`, also adopted after a restart or where its holder died). Its
    /// follow-up is a poll (a Source's or an intent's), leased on its own: once one follows this
    /// session, the job only settles it if that poll finished without the session hearing of it
    /// (a crash between the two).
    func followUpJob(_ id: String) -> LeasedWork.Job {
        LeasedWork.Job(name: "followup:\(id)") { [self] in
            guard let record = try? await table.find(id), record.awaitsOutcome else { return }
            switch record.kind {
            case .source:
                if let sourceID = record.sourceId, let source = try? await sources.table.find(sourceID),
                    let poll = source.poll, poll.redirect == id
                {
                    if poll.status == .finished {
                        await pollFinished(redirect: id, source: source.source, error: poll.error)
                    }
                    return
                }
            case .paymentIntent:
                if await resumedIntentFollowUp(PaymentIntent.self, record, record.paymentIntentId) { return }
            case .setupIntent:
                if await resumedIntentFollowUp(SetupIntent.self, record, record.setupIntentId) { return }
            }
            await followUp(record)
        }
    }

    /// Whether the intent's follow-up poll was started already (it reports when it ends).
    private func resumedIntentFollowUp<Intent: StripeIntent>(
        _ type: Intent.Type, _ session: RedirectRecord, _ id: String?
    )
        async -> Bool
    {
        guard let id, let record = try? await Intent.polls(in: intents).table.find(id), let poll = record.poll,
            poll.redirect == session.id
        else { return false }
        if poll.status == .finished, let result = poll.result {
            await intentPollFinished(
                IntentPollEnd(
                    kind: Intent.kind, id: id, redirect: session.id, result: result, error: poll.error,
                    intent: record.intent["status"] == nil ? nil : record.intent))
        }
        return true
    }

    private func followUp(_ record: RedirectRecord) async {
        switch record.kind {
        case .source:
            guard let id = record.sourceId else { return }
            do {
                _ = try await sources.startPoll(
                    id: id, for: .daemon, clientSecret: record.clientSecret, timeout: record.followUpTimeout,
                    redirect: record.id)
            } catch {
                await settleFailure(record.id, error)
            }
        case .paymentIntent: await followUp(PaymentIntent.self, record, record.paymentIntentId)
        case .setupIntent: await followUp(SetupIntent.self, record, record.setupIntentId)
        }
    }

    private func followUp<Intent: StripeIntent>(_ type: Intent.Type, _ record: RedirectRecord, _ id: String?) async {
        guard let id else { return }
        do {
            _ = try await Intent.polls(in: intents).start(
                for: Caller(uid: record.owner), id: id, clientSecret: record.clientSecret, intent: nil,
                purpose: .followUp, entry: record.entry ?? .handleNextAction, redirect: record.id,
                paymentMethodType: record.paymentMethodType, pingURL: record.pingURL)
        } catch {
            await settleFailure(record.id, error)
        }
    }

    public func intentPollFinished(_ end: IntentPollEnd) async {
        guard let redirect = end.redirect else { return }
        await settle(
            redirect, result: end.intent?["status"]?.stringValue ?? "error", intentResult: end.result,
            error: end.error, object: end.intent)
    }

    public func pollFinished(redirect: String, source: JSONValue?, error: Failure?) async {
        let status = source?["status"]?.stringValue
        await settle(redirect, result: error == nil ? status ?? "unknown" : "error", error: error, object: source)
    }

    /// A follow-up that failed settles with its error, unless it was stopped (the lease went):
    /// then whoever takes it over follows it up again.
    private func settleFailure(_ id: String, _ error: any Error) async {
        if Task.isCancelled { return }
        await settle(id, result: "error", error: Failure(error, describedBy: table.log.failures), object: nil)
    }

    private func settle(
        _ id: String, result: String, intentResult: IntentResult? = nil, error: Failure?, object: JSONValue?
    ) async {
        let settled = try? await table.update(id, for: .daemon) { record in
            guard record.awaitsOutcome else { return nil }
            record.outcome = .init(
                result: result, intentResult: intentResult, error: error, object: object, at: now().formatted(.iso8601))
            return .outcome
        }
        guard settled?.event != nil, let outcome = settled?.record.outcome else { return }
        await tellFollowers(id, outcome)
    }

    func tellFollowers(_ id: String, _ outcome: RedirectOutcome) async {
        for follower in outcomeFollowers.withLock({ $0 }) {
            await follower.redirectSettled(session: id, outcome: outcome)
        }
    }
}

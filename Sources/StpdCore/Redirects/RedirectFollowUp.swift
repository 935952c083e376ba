import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// Told when a redirect session's follow-up has an outcome (a payment context waiting on it).
public protocol RedirectOutcomeFollower: Sendable {
    func redirectSettled(session: String, outcome: RedirectOutcome) async
}

/// What the seeds tell an app to do once a redirect completes: poll the Source for a short while
/// and show chargeable / consumed / failed / still pending; re-fetch the PaymentIntent (or SetupIntent) and
/// show its status. The result is the session's `outcome` (`redirect.outcome`).
extension RedirectSessions: PollFollower {
    public func follow(with follower: any RedirectOutcomeFollower) { outcomeFollowers.withLock { $0.append(follower) } }

    func startFollowUp(_ record: RedirectRecord) {
        guard record.awaitsOutcome else { return }
        let job = followUpJob(record.id)
        work.start(job.name, job.run)
    }

    /// Follows the session up if it still awaits its outcome once the lease is taken (leased
    /// work, `followup:<id>`, also adopted after a restart or where its holder died). A Source's
    /// follow-up is a poll, leased on its own: once one follows this session, the job only
    /// settles it if that poll finished without the session hearing of it (a crash between the two).
    func followUpJob(_ id: String) -> LeasedWork.Job {
        LeasedWork.Job(name: "followup:\(id)") { [self] in
            guard let record = try? await table.find(id), record.awaitsOutcome else { return }
            if record.kind == .source, let sourceID = record.sourceId,
                let source = try? await sources.table.find(sourceID), let poll = source.poll, poll.redirect == id
            {
                if poll.status == .finished {
                    await pollFinished(redirect: id, source: source.source, error: poll.error)
                }
                return
            }
            await followUp(record)
        }
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
        case .paymentIntent:
            do {
                let intent = try await api.retrievePaymentIntent(clientSecret: record.clientSecret)
                await settle(
                    record.id, result: intent.status.rawValue, error: nil,
                    object: intent.allResponseFields.withoutClientSecret)
            } catch {
                await settleFailure(record.id, error)
            }
        case .setupIntent:
            do {
                let intent = try await api.retrieveSetupIntent(clientSecret: record.clientSecret)
                await settle(
                    record.id, result: intent.status.rawValue, error: nil,
                    object: intent.allResponseFields.withoutClientSecret)
            } catch {
                await settleFailure(record.id, error)
            }
        }
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

    private func settle(_ id: String, result: String, error: Failure?, object: JSONValue?) async {
        let settled = try? await table.update(id, for: .daemon) { record in
            guard record.awaitsOutcome else { return nil }
            record.outcome = .init(result: result, error: error, object: object, at: now().formatted(.iso8601))
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

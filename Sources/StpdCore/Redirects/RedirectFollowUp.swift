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
        background.start { [self] in await followUp(record) }
    }

    /// After a restart: a Source's follow-up poll resumes by itself unless the crash came first.
    func resumeFollowUp(_ record: RedirectRecord) async {
        if record.kind == .source, let id = record.sourceId, let source = try? await sources.table.find(id),
            let poll = source.poll, poll.redirect == record.id
        {
            if poll.status == .finished {
                await pollFinished(redirect: record.id, source: source.source, error: poll.error)
            }
            return
        }
        startFollowUp(record)
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
                await settle(record.id, result: "error", error: failure(error), object: nil)
            }
        case .paymentIntent:
            do {
                let intent = try await api.retrievePaymentIntent(clientSecret: record.clientSecret)
                await settle(
                    record.id, result: intent.status.rawValue, error: nil,
                    object: intent.allResponseFields.withoutClientSecret)
            } catch {
                await settle(record.id, result: "error", error: failure(error), object: nil)
            }
        case .setupIntent:
            do {
                let intent = try await api.retrieveSetupIntent(clientSecret: record.clientSecret)
                await settle(
                    record.id, result: intent.status.rawValue, error: nil,
                    object: intent.allResponseFields.withoutClientSecret)
            } catch {
                await settle(record.id, result: "error", error: failure(error), object: nil)
            }
        }
    }

    public func pollFinished(redirect: String, source: JSONValue?, error: Failure?) async {
        let status = source?["status"]?.stringValue
        await settle(redirect, result: error == nil ? status ?? "unknown" : "error", error: error, object: source)
    }

    private func failure(_ error: any Error) -> Failure { Failure(error, describedBy: table.log.failures) }

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

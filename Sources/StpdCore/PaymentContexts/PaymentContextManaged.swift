import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// Beyond the SDK: stpd confirms the app's PaymentIntent with the selected PaymentMethod and
/// handles its next action as STPPaymentHandler does (`PaymentHandler`): a 3-D Secure or bank
/// redirect through a redirect session, a QR code or banking app through a poll, and finishes with
/// STPPaymentHandler's verdict (succeeded: success, canceled: userCancellation, failed: error).
extension PaymentContexts: RedirectOutcomeFollower, IntentPollFollower {
    func confirmManaged(_ id: String) async {
        guard let record = try? await table.find(id), let managed = record.managed, let method = record.selected
        else { return }
        do {
            let handled: PaymentHandler.Handled<PaymentIntent> = try await payments.confirm(
                PaymentIntent.self,
                PaymentIntentConfirmParams(
                    clientSecret: managed.clientSecret, paymentMethodID: method, returnURL: managed.returnURL),
                for: record.caller, start: Self.startAtOnce)
            await settle(id, handled)
        } catch {
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    /// A redirect session is started at once (automatic mode): the app opens its openURL.
    private static let startAtOnce = RedirectStartOptions(mode: .automatic)

    /// After a restart: a confirm may or may not have reached Stripe, so look before confirming again.
    func resumeManaged(_ id: String) async {
        guard let record = try? await table.find(id), let managed = record.managed else { return }
        do {
            let intent = try await payments.retrieve(PaymentIntent.self, clientSecret: managed.clientSecret)
            if intent.status == .requiresPaymentMethod || intent.status == .requiresConfirmation {
                await confirmManaged(id)
            } else {
                await settle(
                    id,
                    try await payments.handle(
                        intent, clientSecret: managed.clientSecret, returnURL: managed.returnURL, for: record.caller,
                        start: Self.startAtOnce))
            }
        } catch {
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    private func settle(_ id: String, _ handled: PaymentHandler.Handled<PaymentIntent>) async {
        guard handled.result == .pending else {
            return await finishManaged(id, status: Self.status(of: handled.result), error: handled.failure)
        }
        _ = try? await update(id) { record in
            guard record.managed != nil else { return nil }
            if let session = handled.redirect {
                record.redirect = session.id
                record.needs = .redirect
            } else {
                record.awaiting = handled.intent.id
                record.needs = .nextAction
            }
            return .needsInput
        }
    }

    /// STPPaymentHandler's action status as the context's STPPaymentStatus.
    private static func status(of result: IntentResult) -> PaymentStatus {
        switch result {
        case .succeeded, .pending: .success
        case .canceled: .userCancellation
        case .failed: .error
        }
    }

    public func redirectSettled(session: String, outcome: RedirectOutcome) async {
        let waiting = try? await table.filed(under: PaymentContextRecord.redirectKey(session), for: .daemon)
        guard let id = waiting?.first?.id else { return }
        if let result = outcome.intentResult {
            await finishManaged(id, status: Self.status(of: result), error: outcome.error)
        } else {
            // Completed with an error, so never followed up (the page failed, or the app could not open).
            let cancelled = outcome.error?.isRedirectCancelled ?? false
            await finishManaged(
                id, status: cancelled ? .userCancellation : .error, error: cancelled ? nil : outcome.error)
        }
    }

    public func intentPollFinished(_ end: IntentPollEnd) async {
        guard end.redirect == nil, end.kind == .paymentIntent else { return }
        let waiting = try? await table.filed(under: PaymentContextRecord.awaitingKey(end.id), for: .daemon)
        guard let id = waiting?.first?.id else { return }
        await finishManaged(id, status: Self.status(of: end.result), error: end.error)
    }

    private func finishManaged(_ id: String, status: PaymentStatus, error: Failure?) async {
        _ = try? await update(id) { record in
            guard record.managed != nil else { return nil }
            Self.finish(&record, status: status, error: error)
            return .didFinish
        }
    }

    /// In a fleet: times the pending actions of live contexts that no timer here times. Each is
    /// timed only where its lease is taken, so this picks up the deadlines of a daemon that died
    /// once their leases expired, each with its original deadline.
    public func adoptDeadlines() async throws {
        let timed = timers.withLock { Set($0.keys) }
        for record in try await table.live(for: .daemon) {
            guard let pending = record.pending, !timed.contains(pending.id) else { continue }
            startTimer(context: record.id, action: pending.id, deadline: pending.deadline)
        }
    }

    /// Loads stored contexts and picks up what was under way: loading, deadlines, managed payments.
    public func restore() async throws {
        for record in try await table.restore() {
            if record.loading { startLoading(record.id) }
            if let pending = record.pending {
                startTimer(context: record.id, action: pending.id, deadline: pending.deadline)
            }
            guard record.managed != nil, record.requestState == .requestingPayment, record.pending == nil else {
                continue
            }
            if let session = record.redirect {
                if let outcome = try? await redirects.table.find(session)?.outcome {
                    await redirectSettled(session: session, outcome: outcome)
                }
            } else if let intent = record.awaiting {
                // The poll resumes by itself, unless it ended before the restart.
                if let poll = try? await redirects.intents.paymentIntents.table.find(intent)?.poll,
                    poll.status == .finished, let result = poll.result
                {
                    await finishManaged(record.id, status: Self.status(of: result), error: poll.error)
                }
            } else if record.needs == nil {
                background.start { [self] in await resumeManaged(record.id) }
            }
        }
    }
}

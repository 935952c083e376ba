import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// Beyond the SDK: stpd confirms the app's PaymentIntent with the selected PaymentMethod and
/// handles its next action as STPPaymentHandler does (`PaymentHandler`): a 3-D Secure or bank
/// redirect through a redirect session, a QR code or banking app through a poll, and finishes with
/// STPPaymentHandler's verdict (succeeded: success, canceled: userCancellation, failed: error).
extension PaymentContexts: RedirectOutcomeFollower, IntentPollFollower {
    /// `takenOver`: a daemon that died may have confirmed already, its confirm still on its way to
    /// Stripe: one that fails is looked at once more, and a PaymentIntent confirmed meanwhile is
    /// settled as it stands (paid: success; a next action: handled).
    func confirmManaged(_ id: String, takenOver: Bool = false) async {
        guard let record = try? await table.find(id), let managed = record.managed, let method = record.selected
        else { return }
        do {
            let handled: PaymentHandler.Handled<PaymentIntent> = try await redirects.resolveReturnURL(
                managed.returnURL, appName: record.companyName
            ) { returnURL in
                try await payments.confirm(
                    PaymentIntent.self,
                    PaymentIntentConfirmParams(
                        clientSecret: managed.clientSecret, paymentMethodID: method, returnURL: returnURL),
                    for: record.caller, start: Self.startAtOnce, entry: .managedPayment)
            }
            await settle(id, handled)
        } catch {
            // Stopped (the lease went): the daemon that takes it over looks before confirming again.
            if Task.isCancelled { return }
            if takenOver,
                let intent = try? await payments.retrieve(PaymentIntent.self, clientSecret: managed.clientSecret),
                !Self.awaitsConfirm(intent)
            {
                return await settle(id, read: intent, record)
            }
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    /// A redirect session is started at once (automatic mode): the app opens its openURL.
    private static let startAtOnce = RedirectSessions.StartOptions(mode: .automatic)
    static func managedLease(_ id: String) -> String { "managed:\(id)" }

    /// After a restart: a confirm may or may not have reached Stripe, so look before confirming again.
    func resumeManaged(_ id: String) async {
        guard let record = try? await table.find(id), let managed = record.managed else { return }
        do {
            let intent = try await payments.retrieve(PaymentIntent.self, clientSecret: managed.clientSecret)
            if Self.awaitsConfirm(intent) {
                await confirmManaged(id, takenOver: true)
            } else {
                await settle(id, read: intent, record)
            }
        } catch {
            if Task.isCancelled { return }
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    private static func awaitsConfirm(_ intent: PaymentIntent) -> Bool {
        intent.status == .requiresPaymentMethod || intent.status == .requiresConfirmation
    }

    /// Settles with a PaymentIntent confirmed before (by this daemon before a restart, or by one
    /// that died): its next action is handled, or its status is the verdict.
    private func settle(_ id: String, read intent: PaymentIntent, _ record: PaymentContextRecord) async {
        guard let managed = record.managed else { return }
        do {
            await settle(
                id,
                try await redirects.resolveReturnURL(managed.returnURL, appName: record.companyName) { returnURL in
                    try await payments.handle(
                        intent, clientSecret: managed.clientSecret, returnURL: returnURL, for: record.caller,
                        start: Self.startAtOnce, entry: .managedPayment)
                })
        } catch {
            if Task.isCancelled { return }
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

    /// What must run for a live context: its loading, its pending action's deadline, its managed
    /// payment (resumed by looking at the PaymentIntent first, or finished from its redirect's
    /// outcome). Started at start and, in a fleet, wherever its holder died.
    func adoptable(_ record: PaymentContextRecord) -> [LeasedWork.Job] {
        var jobs: [LeasedWork.Job] = []
        let id = record.id
        if record.loading { jobs.append(loadingJob(id)) }
        if let pending = record.pending {
            jobs.append(deadlineJob(context: id, action: pending.id, deadline: pending.deadline))
        }
        guard record.managed != nil, record.requestState == .requestingPayment, record.pending == nil else {
            return jobs
        }
        if let session = record.redirect {
            jobs.append(
                LeasedWork.Job(name: Self.managedLease(id)) { [self] in
                    if let outcome = try? await redirects.table.find(session)?.outcome {
                        await redirectSettled(session: session, outcome: outcome)
                    }
                })
        } else if let intent = record.awaiting {
            // Its poll is leased work of its own: this only settles a poll that finished without
            // the context hearing of it (a crash between the two).
            jobs.append(
                LeasedWork.Job(name: Self.managedLease(id)) { [self] in
                    if let poll = try? await redirects.intents.paymentIntents.table.find(intent)?.poll,
                        poll.status == .finished, let result = poll.result
                    {
                        await finishManaged(id, status: Self.status(of: result), error: poll.error)
                    }
                })
        } else if record.needs == nil {
            jobs.append(LeasedWork.Job(name: Self.managedLease(id)) { [self] in await resumeManaged(id) })
        }
        return jobs
    }

}

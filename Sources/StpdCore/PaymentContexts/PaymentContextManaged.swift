import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// Beyond the SDK: stpd confirms the app's PaymentIntent with the selected PaymentMethod, runs a
/// 3-D Secure or bank redirect through a redirect session, and finishes with the outcome.
extension PaymentContexts: RedirectOutcomeFollower {
    /// `takenOver`: a daemon that died may have confirmed already, its confirm still on its way to
    /// Stripe: one that fails is looked at once more, and a PaymentIntent paid meanwhile is success.
    func confirmManaged(_ id: String, takenOver: Bool = false) async {
        guard let record = try? await table.find(id), let managed = record.managed, let method = record.selected
        else { return }
        do {
            let intent = try await api.confirmPaymentIntent(
                PaymentIntentConfirmParams(
                    clientSecret: managed.clientSecret, paymentMethodID: method, returnURL: managed.returnURL))
            try await settle(id, intent: intent, clientSecret: managed.clientSecret)
        } catch {
            // Stopped (the lease went): the daemon that takes it over looks before confirming again.
            if Task.isCancelled { return }
            if takenOver, let intent = try? await api.retrievePaymentIntent(clientSecret: managed.clientSecret),
                Self.isPaid(intent.status)
            {
                await finishManaged(id, status: .success, error: nil)
                return
            }
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    static func managedLease(_ id: String) -> String { "managed:\(id)" }

    /// After a restart: a confirm may or may not have reached Stripe, so look before confirming again.
    func resumeManaged(_ id: String) async {
        guard let managed = try? await table.find(id)?.managed else { return }
        do {
            let intent = try await api.retrievePaymentIntent(clientSecret: managed.clientSecret)
            if intent.status == .requiresPaymentMethod || intent.status == .requiresConfirmation {
                await confirmManaged(id, takenOver: true)
            } else {
                try await settle(id, intent: intent, clientSecret: managed.clientSecret)
            }
        } catch {
            if Task.isCancelled { return }
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    private func settle(_ id: String, intent: PaymentIntent, clientSecret: String) async throws {
        guard !Self.isPaid(intent.status) else { return await finishManaged(id, status: .success, error: nil) }
        guard let owner = try await table.find(id)?.owner else { return }
        let handled = try await payments.handleNextAction(
            of: intent, clientSecret: clientSecret, for: Caller(uid: owner),
            start: RedirectStartOptions(mode: .automatic))
        guard let session = handled.redirect else {
            return await finishManaged(
                id, status: .error,
                error: Self.unpaid(intent.status.rawValue, intent.lastPaymentError?.allResponseFields))
        }
        try await update(id) { record in
            guard record.managed != nil else { return nil }
            record.redirect = session.id
            record.needs = .redirect
            return .needsInput
        }
    }

    public func redirectSettled(session: String, outcome: RedirectOutcome) async {
        let waiting = try? await table.filed(under: PaymentContextRecord.redirectKey(session), for: .daemon)
        guard let id = waiting?.first?.id else { return }
        if let error = outcome.error {
            // The customer closed the bank page: STPPaymentHandler's canceled, the context's userCancellation.
            let cancelled = error.isRedirectCancelled
            await finishManaged(id, status: cancelled ? .userCancellation : .error, error: cancelled ? nil : error)
        } else if Self.isPaid(PaymentIntent.Status(apiValue: outcome.result)) {
            await finishManaged(id, status: .success, error: nil)
        } else {
            await finishManaged(
                id, status: .error, error: Self.unpaid(outcome.result, outcome.object?["last_payment_error"]))
        }
    }

    /// The SDK's success: the payment went through, or will (processing, or authorized to capture).
    private static func isPaid(_ status: PaymentIntent.Status) -> Bool {
        status == .succeeded || status == .processing || status == .requiresCapture
    }

    private static func unpaid(_ status: String, _ lastError: JSONValue?) -> Failure {
        .domain(
            .paymentFailed(
                detail: "the PaymentIntent is \(status)",
                data: ["paymentIntentStatus": .string(status), "lastPaymentError": lastError ?? .null]))
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
        } else if record.needs == nil {
            jobs.append(LeasedWork.Job(name: Self.managedLease(id)) { [self] in await resumeManaged(id) })
        }
        return jobs
    }

}

import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// Beyond the SDK: stpd confirms the app's PaymentIntent with the selected PaymentMethod, runs a
/// 3-D Secure or bank redirect through a redirect session, and finishes with the outcome.
extension PaymentContexts: RedirectOutcomeFollower {
    func confirmManaged(_ id: String) async {
        guard let record = try? await table.find(id), let managed = record.managed, let method = record.selected
        else { return }
        do {
            let intent = try await api.confirmPaymentIntent(
                PaymentIntentConfirmParams(
                    clientSecret: managed.clientSecret, paymentMethodID: method, returnURL: managed.returnURL))
            try await settle(id, intent: intent, clientSecret: managed.clientSecret)
        } catch {
            await finishManaged(id, status: .error, error: Failure(error, describedBy: table.log.failures))
        }
    }

    /// After a restart: a confirm may or may not have reached Stripe, so look before confirming again.
    func resumeManaged(_ id: String) async {
        guard let managed = try? await table.find(id)?.managed else { return }
        do {
            let intent = try await api.retrievePaymentIntent(clientSecret: managed.clientSecret)
            if intent.status == .requiresPaymentMethod || intent.status == .requiresConfirmation {
                await confirmManaged(id)
            } else {
                try await settle(id, intent: intent, clientSecret: managed.clientSecret)
            }
        } catch {
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
            } else if record.needs == nil {
                background.start { [self] in await resumeManaged(record.id) }
            }
        }
    }
}

import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// requestPayment's state machine, the pending actions the app answers, and stpd-managed
/// PaymentIntents.
extension PaymentContexts {
    /// `paymentIntent`: the client secret (and return URL) of a PaymentIntent stpd confirms itself.
    public func requestPayment(
        id: String, for caller: Caller, paymentIntent: (clientSecret: String, returnURL: String?)?
    )
        async throws -> PaymentContextRecord
    {
        let record = try await record(id, caller, open: true)
        let managed = paymentIntent.map {
            PaymentContextRecord.ManagedIntent(clientSecret: $0.clientSecret, returnURL: $0.returnURL)
        }
        // The SDK ignores it while a request runs or a screen shows (state != none): an address the
        // app is validating is the shipping screen showing.
        guard record.requestState == .none, record.pending == nil else { return record }
        // The SDK waits for its loading promise; the request runs when loading ends.
        let waits = try await update(id, for: caller) { record in
            guard record.requestState == .none, record.pending == nil, record.loading else { return nil }
            record.managed = managed
            record.requestWaitsForLoad = true
            return .didChange
        }
        if waits.loading { return waits }
        return try await proceedWithRequest(id, managed: managed)
    }

    /// The SDK's requestPayment once loading has resolved.
    /// `managed`: a PaymentIntent stpd confirms, when the request brings one.
    @discardableResult
    func proceedWithRequest(_ id: String, managed: PaymentContextRecord.ManagedIntent? = nil) async throws
        -> PaymentContextRecord
    {
        let actionID = ObjectID.make("pact_")
        let proceeded = try await update(id) { record in
            let waited = record.requestWaitsForLoad
            record.requestWaitsForLoad = false
            if let error = record.loadError {
                Self.finish(&record, status: .error, error: error)
                return .didFinish
            }
            guard record.requestState == .none, record.pending == nil, record.status == .open else {
                return waited ? .didChange : nil
            }
            record.requestState = .requestingPayment
            if let managed { record.managed = managed }
            if record.selected == nil {
                record.needs = .paymentOption
                return .needsInput
            }
            if record.needsShippingInput {
                record.needs = .shippingAddress
                return .needsInput
            }
            if record.managed != nil { return .didChange }
            let option = record.options.first { $0.id == record.selected }
            record.pending = .init(
                id: actionID, kind: .didCreatePaymentResult,
                deadline: now().addingTimeInterval(record.pendingActionTimeout),
                payload: ["paymentMethod": option?.paymentMethod ?? .null])
            return .pendingAction
        }
        if let pending = proceeded.pending, pending.id == actionID {
            startTimer(context: id, action: pending.id, deadline: pending.deadline)
        }
        if proceeded.requestState == .requestingPayment, proceeded.needs == nil, proceeded.pending == nil,
            proceeded.managed != nil
        {
            work.start(Self.managedLease(id)) { [self] in await confirmManaged(id) }
        }
        return proceeded
    }

    /// The SDK re-enters requestPayment when the screen it showed is done.
    func continueIfWaiting(_ id: String, for input: PaymentContextNeed) async throws -> PaymentContextRecord? {
        let resumed = try await apply(id) { record in
            guard record.requestState == .requestingPayment, record.needs == input else { return nil }
            record.requestState = .none
            record.needs = nil
            return .didChange
        }
        guard resumed.event != nil else { return nil }
        return try await proceedWithRequest(id)
    }

    /// Opens a pending action for the app (didUpdateShippingAddress here; didCreatePaymentResult in
    /// proceedWithRequest).
    func ask(_ id: String, for caller: Caller, kind: PendingActionKind, payload: JSONValue) async throws
        -> PaymentContextRecord
    {
        let actionID = ObjectID.make("pact_")
        let asked = try await apply(id, for: caller) { record in
            if let pending = record.pending {
                throw DomainError.invalidState(
                    .paymentContext, id: id, state: pending.kind.rawValue,
                    detail: "a \(pending.kind) pending action is waiting")
            }
            let deadline = now().addingTimeInterval(record.pendingActionTimeout)
            record.pending = .init(id: actionID, kind: kind, deadline: deadline, payload: payload)
            return .pendingAction
        }
        if let pending = asked.record.pending {
            startTimer(context: id, action: pending.id, deadline: pending.deadline)
        }
        return asked.record
    }

    /// The app's completion of a pending action. Another uid's action answers as one that does
    /// not exist (PendingActionGone).
    public func answer(for caller: Caller, _ params: PendingActionCompletion) async throws -> PaymentContextRecord {
        let found = try await table.filed(under: PaymentContextRecord.actionKey(params.action), for: caller).first
        guard let record = found, let pending = record.pending, pending.id == params.action else {
            throw DomainError.pendingActionGone(
                action: params.action, detail: "\(params.action) is not waiting (answered, timed out or unknown)")
        }
        let allowed = PendingActionAnswer.allowed(for: pending.kind)
        guard allowed.contains(params.status) else {
            throw DomainError.invalidInput(
                input: "status",
                detail: "a \(pending.kind) answer is one of \(allowed.map(\.rawValue).joined(separator: ", "))")
        }
        let appError = params.error.map { failure in
            Failure.domain(
                .paymentFailed(
                    detail: failure.message,
                    data: ["message": .string(failure.message), "code": failure.code.map(JSONValue.string) ?? .null]))
        }
        let answered = try await update(record.id, for: caller) { record in
            guard record.pending?.id == params.action else {
                throw DomainError.pendingActionGone(
                    action: params.action, detail: "\(params.action) was answered already")
            }
            record.pending = nil
            if pending.kind == .didCreatePaymentResult, let status = PaymentStatus(rawValue: params.status.rawValue) {
                Self.finish(
                    &record, status: status,
                    error: params.status == .error
                        ? appError ?? .domain(.paymentFailed(detail: nil, data: [:])) : nil)
                return .didFinish
            }
            guard params.status == .valid else {
                record.shippingError =
                    appError ?? .domain(.paymentFailed(detail: "Invalid Shipping Address", data: [:]))
                return .shippingInvalid
            }
            record.shippingError = nil
            return .didChange
        }
        guard pending.kind == .didUpdateShippingAddress, params.status == .valid,
            let address = try? JSONCoding.typed(ShippingAddressParams.self, from: pending.payload["address"] ?? .null)
        else { return answered }
        return try await acceptShipping(
            record.id, for: caller, address: address,
            answer: (params.shippingMethods, params.selectedShippingMethod))
    }

    /// The customer backed out of a screen requestPayment showed: didFinish(userCancellation).
    public func cancel(id: String, for caller: Caller) async throws -> PaymentContextRecord {
        let record = try await record(id, caller, open: true)
        if record.needs == .redirect, let session = record.redirect {
            _ = try? await redirects.cancel(id: session, for: .daemon)
        }
        // A didUpdateShippingAddress being answered goes with it (update ends its deadline timer).
        let cancelled = try await update(id, for: caller) { record in
            guard record.requestState == .requestingPayment, record.needs != nil else {
                throw DomainError.invalidState(
                    .paymentContext, id: id, state: record.requestState.rawValue,
                    detail: "requestPayment is not waiting for input")
            }
            Self.finish(&record, status: .userCancellation, error: nil)
            return .didFinish
        }
        await work.stop(Self.managedLease(id))
        return cancelled
    }

    static func finish(_ record: inout PaymentContextRecord, status: PaymentStatus, error: Failure?) {
        record.requestState = .none
        record.needs = nil
        record.pending = nil
        record.managed = nil
        record.redirect = nil
        record.awaiting = nil
        record.lastResult = .init(status: status, error: error)
    }

    // MARK: Deadlines

    static func deadlineLease(_ action: String) -> String { "deadline:\(action)" }

    /// Times the pending action (its timer ends when the action ends: `update` stops it).
    func startTimer(context: String, action: String, deadline: Date) {
        let job = deadlineJob(context: context, action: action, deadline: deadline)
        work.start(job.name, job.run)
    }

    func deadlineJob(context: String, action: String, deadline: Date) -> LeasedWork.Job {
        LeasedWork.Job(name: Self.deadlineLease(action)) { [self, clock, now] in
            let delay = max(0, deadline.timeIntervalSince(now()))
            guard (try? await clock.sleep(for: .seconds(delay))) != nil else { return }
            await timeOut(context: context, action: action)
        }
    }

    private func timeOut(context: String, action: String) async {
        _ = try? await update(context) { record in
            guard let pending = record.pending, pending.id == action else { return nil }
            let error = Failure.domain(
                .pendingActionTimedOut(
                    action: action, kind: pending.kind.rawValue,
                    detail: "\(pending.kind) got no answer within \(Int(record.pendingActionTimeout)) s"))
            record.pending = nil
            if pending.kind == .didCreatePaymentResult {
                Self.finish(&record, status: .error, error: error)
                return .didFinish
            }
            record.shippingError = error
            return .shippingInvalid
        }
    }
}

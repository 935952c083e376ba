import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// requestPayment's state machine, the pending actions the app answers, and stpd-managed
/// PaymentIntents.
extension PaymentContexts {
    public func requestPayment(
        id: String, viewer: UInt32?, paymentIntent: PaymentContextRequestPayment.Params.ManagedIntent?
    ) async throws -> PaymentContextView {
        let record = try record(id, viewer, open: true)
        let managed = paymentIntent.map {
            PaymentContextRecord.ManagedIntent(clientSecret: $0.clientSecret, returnURL: $0.returnURL)
        }
        // The SDK ignores it while a request runs or a screen shows (state != none): an address the
        // app is validating is the shipping screen showing.
        guard record.requestState == .none, record.pending == nil else { return record.view }
        // The SDK waits for its loading promise; the request runs when loading ends.
        let waits = try await update(id) { record in
            guard record.requestState == .none, record.pending == nil else { return nil }
            // Kept in memory; the event proceedWithRequest writes next stores it.
            record.managed = managed
            guard record.loading else { return nil }
            record.requestWaitsForLoad = true
            return "paymentContext.didChange"
        }
        if waits.loading { return waits }
        return try await proceedWithRequest(id)
    }

    /// The SDK's requestPayment once loading has resolved.
    @discardableResult
    func proceedWithRequest(_ id: String) async throws -> PaymentContextView {
        let actionID = ObjectID.make("pact_")
        let view = try await update(id) { record in
            let waited = record.requestWaitsForLoad
            record.requestWaitsForLoad = false
            if let error = record.loadError {
                Self.finish(&record, status: "error", error: error)
                return "paymentContext.didFinish"
            }
            guard record.requestState == .none, record.pending == nil, record.status == "open" else {
                return waited ? "paymentContext.didChange" : nil
            }
            record.requestState = .requestingPayment
            if record.selected == nil {
                record.needs = "paymentOption"
                return "paymentContext.needsInput"
            }
            if record.needsShippingInput {
                record.needs = "shippingAddress"
                return "paymentContext.needsInput"
            }
            if record.managed != nil { return "paymentContext.didChange" }
            let option = record.options.first { $0.id == record.selected }
            record.pending = .init(
                id: actionID, kind: "didCreatePaymentResult",
                deadline: now().addingTimeInterval(record.pendingActionTimeout),
                payload: ["paymentMethod": option?.paymentMethod ?? .null])
            return "paymentContext.pendingAction"
        }
        if let pending = view.pendingAction, pending.id == actionID, let record = records.withLock({ $0[id] }),
            let deadline = record.pending?.deadline
        {
            startTimer(context: id, action: pending.id, deadline: deadline)
        }
        if view.requestState == "requestingPayment", view.needs == nil, view.pendingAction == nil,
            records.withLock({ $0[id]?.managed }) != nil
        {
            background.start { [self] in await confirmManaged(id) }
        }
        return view
    }

    /// The SDK re-enters requestPayment when the screen it showed is done.
    func continueIfWaiting(_ id: String, for input: String) async throws -> PaymentContextView? {
        var resumed = false
        try await update(id) { record in
            guard record.requestState == .requestingPayment, record.needs == input else { return nil }
            record.requestState = .none
            record.needs = nil
            resumed = true
            return "paymentContext.didChange"
        }
        guard resumed else { return nil }
        return try await proceedWithRequest(id)
    }

    /// Opens a pending action for the app (didUpdateShippingAddress here; didCreatePaymentResult in
    /// proceedWithRequest).
    func ask(_ id: String, kind: String, payload: JSONValue) async throws -> PaymentContextView {
        let actionID = ObjectID.make("pact_")
        var deadline = now()
        let view = try await update(id) { record in
            if let pending = record.pending {
                throw StpdErrors.invalidState(
                    "a \(pending.kind) pending action is waiting", data: ["state": .string(pending.kind)])
            }
            deadline = now().addingTimeInterval(record.pendingActionTimeout)
            record.pending = .init(id: actionID, kind: kind, deadline: deadline, payload: payload)
            return "paymentContext.pendingAction"
        }
        startTimer(context: id, action: actionID, deadline: deadline)
        return view
    }

    public func answer(by uid: UInt32, _ params: PaymentContextAnswer.Params) async throws -> PaymentContextView {
        let found = records.withLock { $0.values.first { $0.pending?.id == params.action } }
        guard let record = found, let pending = record.pending else {
            throw StpdErrors.pendingActionGone(
                "\(params.action) is not waiting (answered, timed out or unknown)",
                data: ["action": .string(params.action)])
        }
        guard uid == 0 || record.owner == uid else {
            throw StpdErrors.permissionDenied(
                "the pending action belongs to another user", data: ["action": .string(params.action)])
        }
        let allowed =
            pending.kind == "didCreatePaymentResult" ? ["success", "error", "userCancellation"] : ["valid", "invalid"]
        guard allowed.contains(params.status) else {
            throw RPCError.invalidParams(
                "a \(pending.kind) answer is one of \(allowed.joined(separator: ", "))", parameter: "status")
        }
        let appError = params.error.map { failure in
            RPCError.json(
                StpdErrors.paymentFailed(
                    failure.message,
                    data: ["message": .string(failure.message), "code": failure.code.map(JSONValue.string) ?? .null]))
        }
        let view = try await update(record.id) { record in
            guard record.pending?.id == params.action else {
                throw StpdErrors.pendingActionGone(
                    "\(params.action) was answered already", data: ["action": .string(params.action)])
            }
            record.pending = nil
            if pending.kind == "didCreatePaymentResult" {
                Self.finish(
                    &record, status: params.status,
                    error: params.status == "error" ? appError ?? RPCError.json(StpdErrors.paymentFailed()) : nil)
                return "paymentContext.didFinish"
            }
            guard params.status == "valid" else {
                record.shippingError = appError ?? RPCError.json(StpdErrors.paymentFailed("Invalid Shipping Address"))
                return "paymentContext.shippingInvalid"
            }
            record.shippingError = nil
            return "paymentContext.didChange"
        }
        endTimer(params.action)
        guard pending.kind == "didUpdateShippingAddress", params.status == "valid",
            let address = try? JSONCoding.typed(ShippingAddressParams.self, from: pending.payload["address"] ?? .null)
        else { return view }
        return try await acceptShipping(
            record.id, address: address, methods: params.shippingMethods ?? [], selected: params.selectedShippingMethod)
    }

    /// The customer backed out of a screen requestPayment showed: didFinish(userCancellation).
    public func cancel(id: String, viewer: UInt32?) async throws -> PaymentContextView {
        let record = try record(id, viewer, open: true)
        if record.needs == "redirect", let session = record.redirect {
            _ = try? await redirects.cancel(id: session, viewer: nil)
        }
        var dropped: String?
        let view = try await update(id) { record in
            guard record.requestState == .requestingPayment, record.needs != nil else {
                throw StpdErrors.invalidState(
                    "requestPayment is not waiting for input", data: ["state": .string(record.requestState.rawValue)])
            }
            dropped = record.pending?.id
            Self.finish(&record, status: "userCancellation", error: nil)
            return "paymentContext.didFinish"
        }
        // A didUpdateShippingAddress being answered goes with it: end its deadline timer (a
        // background job that would otherwise hold off idle exit until the deadline).
        if let dropped { endTimer(dropped) }
        return view
    }

    static func finish(_ record: inout PaymentContextRecord, status: String, error: JSONValue?) {
        record.requestState = .none
        record.needs = nil
        record.pending = nil
        record.managed = nil
        record.redirect = nil
        record.lastResult = ["status": .string(status), "error": error ?? .null]
    }

    // MARK: Deadlines

    func startTimer(context: String, action: String, deadline: Date) {
        let (ended, continuation) = AsyncStream<Void>.makeStream()
        timers.withLock { $0[action] = continuation }
        background.start { [self] in
            let delay = max(0, deadline.timeIntervalSince(now()))
            let fired = await withTaskGroup(of: Bool.self) { group in
                group.addTask { [clock] in (try? await clock.sleep(for: .seconds(delay))) != nil }
                group.addTask {
                    for await _ in ended {}
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if fired { await timeOut(context: context, action: action) }
        }
    }

    func endTimer(_ action: String) {
        timers.withLock { $0.removeValue(forKey: action) }?.finish()
    }

    private func timeOut(context: String, action: String) async {
        timers.withLock { _ = $0.removeValue(forKey: action) }
        _ = try? await update(context) { record in
            guard let pending = record.pending, pending.id == action else { return nil }
            let error = RPCError.json(
                StpdErrors.pendingActionTimedOut(
                    "\(pending.kind) got no answer within \(Int(record.pendingActionTimeout)) s",
                    data: ["action": .string(action), "kind": .string(pending.kind)]))
            record.pending = nil
            if pending.kind == "didCreatePaymentResult" {
                Self.finish(&record, status: "error", error: error)
                return "paymentContext.didFinish"
            }
            record.shippingError = error
            return "paymentContext.shippingInvalid"
        }
    }
}

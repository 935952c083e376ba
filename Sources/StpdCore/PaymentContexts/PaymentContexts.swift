import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization

/// What a payment context asks of its customer session (the SDK's API adapter).
public protocol PaymentContextCustomer: Sendable {
    func clearCache(session: String, owner: UInt32) async throws
    func retrieveCustomer(session: String, owner: UInt32) async throws -> Customer
    func listPaymentMethods(session: String, owner: UInt32) async throws -> [PaymentMethod]
    func attach(session: String, paymentMethod: String, owner: UInt32) async throws
    func detach(session: String, paymentMethod: String, owner: UInt32) async throws
    func updateShipping(session: String, address: StripeAddress, owner: UInt32) async throws
    /// Remembers the last selected PaymentMethod for the session's customer (nil: none).
    func select(session: String, paymentMethod: String?, owner: UInt32) async throws
    /// The customer's last selected PaymentMethod.
    func lastSelected(session: String, customer: String, owner: UInt32) async throws -> String?
}

/// Payment contexts: the SDK's STPPaymentContext, durable, each change a `paymentContext.*` event
/// carrying the full state. The delegate callbacks with a completion are pending actions the app
/// answers (`paymentContext.answer`), with deadlines that survive restarts.
public final class PaymentContexts: Sendable {
    public static let kind = "paymentContext"

    let customers: any PaymentContextCustomer
    let api: any PaymentsAPI
    let redirects: RedirectSessions
    let writer: OrderedWriter
    let store: any StateStore
    let background: BackgroundWork
    let clock: any Clock<Duration>
    let now: @Sendable () -> Date
    let defaultTimeout: Double
    let defaultCompanyName: String?
    let records = Mutex<[String: PaymentContextRecord]>([:])
    /// Ends the deadline timer of a pending action once it is answered.
    let timers = Mutex<[String: AsyncStream<Void>.Continuation]>([:])

    public init(
        customers: any PaymentContextCustomer, api: any PaymentsAPI, redirects: RedirectSessions, log: EventLog,
        writer: OrderedWriter, background: BackgroundWork, pendingActionTimeout: Double = 600,
        companyName: String? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.customers = customers
        self.api = api
        self.redirects = redirects
        self.writer = writer
        store = log.store
        self.background = background
        self.clock = clock
        self.now = now
        defaultTimeout = pendingActionTimeout
        defaultCompanyName = companyName
    }

    public func create(owner: UInt32, _ params: PaymentContextCreate.Params) async throws -> PaymentContextView {
        let id = ObjectID.make("pctx_")
        var configuration = params.configuration ?? PaymentConfiguration()
        if configuration.companyName == nil { configuration.companyName = defaultCompanyName ?? "" }
        let stamp = now()
        var record = PaymentContextRecord(
            id: id, owner: owner, session: params.session, amount: params.amount ?? 0,
            currency: (params.currency ?? "USD").uppercased(), country: (params.country ?? "US").uppercased(),
            configuration: configuration, validatesShipping: params.validatesShipping ?? false,
            defaultPaymentMethod: params.defaultPaymentMethod,
            pendingActionTimeout: params.pendingActionTimeout ?? defaultTimeout,
            createdAt: stamp, updatedAt: stamp)
        if let prefilled = params.prefilledShippingAddress {
            record.shippingAddress = prefilled
            record.shippingNeedsVerification = true
        }
        let pending = try records.withLock { all in
            all[id] = record
            return writer.enqueue([try record.change("paymentContext.created")])
        }
        try await pending.value.get()
        startLoading(id)
        return record.view
    }

    public func get(id: String, viewer: UInt32?) throws -> PaymentContextView { try record(id, viewer).view }

    public func list(viewer: UInt32?) -> [PaymentContextView] {
        records.withLock { Array($0.values) }.filter { viewer == nil || $0.owner == viewer }
            .sorted { $0.createdAt < $1.createdAt }.map(\.view)
    }

    public func retryLoading(id: String, viewer: UInt32?) async throws -> PaymentContextView {
        _ = try record(id, viewer, open: true)
        let view = try await update(id) { record in
            guard !record.loading else { return nil }
            record.loading = true
            record.loadError = nil
            return "paymentContext.didChange"
        }
        startLoading(id)
        return view
    }

    public func setAmount(id: String, viewer: UInt32?, amount: Int?, currency: String?, country: String?) async throws
        -> PaymentContextView
    {
        _ = try record(id, viewer, open: true)
        return try await update(id) { record in
            if let amount { record.amount = amount }
            if let currency { record.currency = currency.uppercased() }
            if let country { record.country = country.uppercased() }
            return "paymentContext.didChange"
        }
    }

    /// The SDK's loading sequence: clear the cache, the customer (its shipping address when the
    /// context has none), its card PaymentMethods, then the selection.
    func startLoading(_ id: String) {
        background.start { [self] in
            guard let record = records.withLock({ $0[id] }) else { return }
            do {
                try await customers.clearCache(session: record.session, owner: record.owner)
                let customer = try await customers.retrieveCustomer(session: record.session, owner: record.owner)
                let methods = try await customers.listPaymentMethods(session: record.session, owner: record.owner)
                var chosen = record.defaultPaymentMethod
                if chosen == nil {
                    chosen = try await customers.lastSelected(
                        session: record.session, customer: customer.id, owner: record.owner)
                }
                _ = try await update(id) { [chosen] record in
                    if record.shippingAddress == nil, let shipping = customer.shippingAddress {
                        record.shippingAddress = ShippingAddressParams(shipping)
                        record.shippingNeedsVerification = true
                    }
                    record.options = PaymentContextRecord.options(methods)
                    record.selected = record.options.first { $0.id == chosen }?.id
                    record.loading = false
                    return "paymentContext.didChange"
                }
            } catch {
                _ = try? await update(id) { record in
                    record.loading = false
                    record.loadError = RPCError.json(error)
                    return "paymentContext.didFailToLoad"
                }
            }
            if records.withLock({ $0[id]?.requestWaitsForLoad }) == true {
                _ = try? await proceedWithRequest(id)
            }
        }
    }

    /// Mutates a record under the lock and commits it with the event `mutate` returns. Nil: nothing a
    /// client sees changed, so the record changes in memory only (the next event stores it).
    @discardableResult
    func update(_ id: String, _ mutate: (inout PaymentContextRecord) throws -> String?) async throws
        -> PaymentContextView
    {
        let (view, pending, dropped) = try records.withLock {
            all -> (PaymentContextView, OrderedWriter.Pending?, String?) in
            guard var record = all[id] else {
                throw StpdErrors.notFound("no payment context \(id)", data: ["context": .string(id)])
            }
            let before = record.pending?.id
            let event = try mutate(&record)
            if event != nil { record.updatedAt = now() }
            all[id] = record
            // A pending action that ended any way (answered, finished, closed) needs no deadline.
            let dropped = before != nil && record.pending?.id != before ? before : nil
            return (record.view, try event.map { writer.enqueue([try record.change($0)]) }, dropped)
        }
        if let dropped { endTimer(dropped) }
        try await pending?.value.get()
        return view
    }

    func record(_ id: String, _ viewer: UInt32?, open: Bool = false) throws -> PaymentContextRecord {
        guard let record = records.withLock({ $0[id] }), viewer == nil || record.owner == viewer else {
            throw StpdErrors.notFound("no payment context \(id)", data: ["context": .string(id)])
        }
        if open, record.status != "open" {
            throw StpdErrors.invalidState("payment context \(id) is closed", data: ["state": .string(record.status)])
        }
        return record
    }
}

extension PaymentContexts: Sweepable {
    /// A context is finished when closed, or idle: loaded, no request running, nothing pending.
    public func sweep(before cutoff: Date) async throws -> Int {
        let pending = try records.withLock { all -> [OrderedWriter.Pending] in
            let done = all.values.filter { record in
                record.updatedAt < cutoff
                    && (record.status == "closed"
                        || (!record.loading && record.requestState == .none && record.pending == nil
                            && !record.requestWaitsForLoad))
            }
            return try done.map { record in
                all[record.id] = nil
                return writer.enqueue([try record.change("paymentContext.removed").removing()])
            }
        }
        for write in pending { try await write.value.get() }
        return pending.count
    }
}

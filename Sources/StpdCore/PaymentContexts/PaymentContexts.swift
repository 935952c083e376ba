import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// What a payment context asks of its customer session (the SDK's API adapter), as its owner.
public protocol PaymentContextCustomer: Sendable {
    /// Refuses (InvalidState) a session that is closed; NotFound for one the caller cannot see.
    func requireOpen(session: String, as caller: Caller) async throws
    func clearCache(session: String, as caller: Caller) async throws
    func retrieveCustomer(session: String, as caller: Caller) async throws -> Customer
    func listPaymentMethods(session: String, as caller: Caller) async throws -> [PaymentMethod]
    func attach(session: String, paymentMethod: String, as caller: Caller) async throws
    func detach(session: String, paymentMethod: String, as caller: Caller) async throws
    func updateShipping(session: String, address: StripeAddress, as caller: Caller) async throws
    /// Remembers the last selected PaymentMethod for the session's customer (nil: none), where the
    /// session's adapter keeps one.
    func select(session: String, paymentMethod: String?, as caller: Caller) async throws
    /// The customer's last selected PaymentMethod, where the session's adapter keeps one.
    func lastSelected(session: String, customer: String, as caller: Caller) async throws -> String?
}

/// What a payment context is created with (STPPaymentContext's initializer and properties).
public struct PaymentContextTerms: Sendable {
    public var session: String
    public var amount: Int
    public var currency: String?
    public var country: String?
    public var configuration: PaymentContextConfiguration?
    /// The app answers didUpdateShippingAddress.
    public var validatesShipping: Bool
    public var prefilledShippingAddress: ShippingAddressParams?
    public var defaultPaymentMethod: String?
    public var pendingActionTimeout: Double?

    public init(
        session: String, amount: Int = 0, currency: String? = nil, country: String? = nil,
        configuration: PaymentContextConfiguration? = nil, validatesShipping: Bool = false,
        prefilledShippingAddress: ShippingAddressParams? = nil, defaultPaymentMethod: String? = nil,
        pendingActionTimeout: Double? = nil
    ) {
        self.session = session
        self.amount = amount
        self.currency = currency
        self.country = country
        self.configuration = configuration
        self.validatesShipping = validatesShipping
        self.prefilledShippingAddress = prefilledShippingAddress
        self.defaultPaymentMethod = defaultPaymentMethod
        self.pendingActionTimeout = pendingActionTimeout
    }
}

/// Payment contexts: the SDK's STPPaymentContext, durable, each change a `paymentContext.*` event
/// carrying the full state. The delegate callbacks with a completion are pending actions the app
/// answers (`paymentContext.answer`), with deadlines that survive restarts. The record core keeps
/// the contexts; this service owns what runs for them, each as leased work so that it runs on one
/// daemon of a fleet and resumes after a restart or on another daemon: loading (`loading:<id>`),
/// deadline timers (`deadline:<action id>`) and managed payments (`managed:<id>`).
public final class PaymentContexts: Sendable {
    let customers: any PaymentContextCustomer
    let api: any PaymentsAPI
    let redirects: RedirectSessions
    /// Confirms a managed PaymentIntent and follows its next action.
    let payments: PaymentHandler
    let table: RecordTable<PaymentContextRecord>
    let background: BackgroundWork
    let clock: any Clock<Duration>
    let now: @Sendable () -> Date
    /// UnionPay's variable-length prefixes for `addCard` (`CardMetadataLookup`).
    let cardMetadata: CardMetadataLookup?
    let defaultTimeout: Double
    /// The merchant's name for a context whose configuration names none, by caller (the daemon's
    /// rule: STPD_MERCHANT_NAME, else the calling app's name).
    let defaultCompanyName: @Sendable (Caller) -> String?
    let work: LeasedWork

    public init(
        customers: any PaymentContextCustomer, api: any PaymentsAPI, redirects: RedirectSessions, log: EventLog,
        background: BackgroundWork, pendingActionTimeout: Double = 600,
        companyName: @escaping @Sendable (Caller) -> String? = { _ in nil },
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init,
        work: LeasedWork? = nil, reportSetAside: @escaping SetAsideReporter = { _, _, _ in },
        cardMetadata: CardMetadataLookup? = nil
    ) {
        self.work = work ?? LeasedWork(background: background)
        self.cardMetadata = cardMetadata
        self.customers = customers
        self.api = api
        self.redirects = redirects
        payments = PaymentHandler(api: api, redirects: redirects)
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.background = background
        self.clock = clock
        self.now = now
        defaultTimeout = pendingActionTimeout
        defaultCompanyName = companyName
        self.work.adopt { [self] in try await table.live(for: .daemon).flatMap(adoptable) }
    }

    /// A new context on the caller's own open session, loading at once.
    public func create(for caller: Caller, _ terms: PaymentContextTerms) async throws -> PaymentContextRecord {
        try await customers.requireOpen(session: terms.session, as: caller)
        var configuration = terms.configuration ?? PaymentContextConfiguration()
        if configuration.companyName == nil { configuration.companyName = defaultCompanyName(caller) ?? "" }
        let stamp = now()
        var record = PaymentContextRecord(
            id: ObjectID.make("pctx_"), owner: caller.uid, session: terms.session, amount: terms.amount,
            currency: (terms.currency ?? "USD").uppercased(), country: (terms.country ?? "US").uppercased(),
            configuration: configuration, validatesShipping: terms.validatesShipping,
            defaultPaymentMethod: terms.defaultPaymentMethod,
            pendingActionTimeout: terms.pendingActionTimeout ?? defaultTimeout, createdAt: stamp, updatedAt: stamp)
        if let prefilled = terms.prefilledShippingAddress {
            record.shippingAddress = prefilled
            record.shippingNeedsVerification = true
        }
        try await table.insert(record, .created)
        startLoading(record.id)
        return record
    }

    public func get(id: String, for caller: Caller) async throws -> PaymentContextRecord {
        try await table.get(id, for: caller)
    }

    public func list(for caller: Caller, status: PaymentContextStatus?, startingAfter: String?, limit: Int)
        async throws -> ([PaymentContextRecord], hasMore: Bool)
    {
        let page = try await table.page(
            for: caller, status: status?.rawValue, startingAfter: startingAfter, limit: limit)
        return (page.records, page.hasMore)
    }

    public func retryLoading(id: String, for caller: Caller) async throws -> PaymentContextRecord {
        _ = try await record(id, caller, open: true)
        let retrying = try await update(id, for: caller) { record in
            guard !record.loading else { return nil }
            record.loading = true
            record.loadError = nil
            return .didChange
        }
        startLoading(id)
        return retrying
    }

    /// What an update sets the payment to: an amount (stpd builds the summary items), or the app's
    /// own summary items, the last one the total.
    public enum Total: Sendable {
        case amount(Int)
        case summaryItems([AppSummaryItem])
    }

    /// The SDK's setters. Setting the amount replaces summary items the app set; setting items makes
    /// their last one's amount the payment amount (0 for none).
    public func setAmount(
        id: String, for caller: Caller, total: Total?, currency: String?, country: String?
    ) async throws -> PaymentContextRecord {
        _ = try await record(id, caller, open: true)
        return try await update(id, for: caller) { record in
            switch total {
            case .amount(let amount)?:
                record.amount = amount
                record.customSummaryItems = nil
            case .summaryItems(let items)?:
                record.customSummaryItems = items
                record.amount = items.last?.amount ?? 0
            case nil: break
            }
            if let currency { record.currency = currency.uppercased() }
            if let country { record.country = country.uppercased() }
            return .didChange
        }
    }

    /// The SDK's loading sequence: clear the cache, the customer (its shipping address when the
    /// context has none), its card PaymentMethods, then the selection.
    func startLoading(_ id: String) {
        let job = loadingJob(id)
        work.start(job.name, job.run)
    }

    static func loadingLease(_ id: String) -> String { "loading:\(id)" }

    func loadingJob(_ id: String) -> LeasedWork.Job {
        LeasedWork.Job(name: Self.loadingLease(id)) { [self] in await load(id) }
    }

    private func load(_ id: String) async {
        guard let record = try? await table.find(id), record.loading, record.status == .open else { return }
        do {
            try await customers.clearCache(session: record.session, as: record.caller)
            let customer = try await customers.retrieveCustomer(session: record.session, as: record.caller)
            let methods = try await customers.listPaymentMethods(session: record.session, as: record.caller)
            var chosen = record.defaultPaymentMethod
            if chosen == nil {
                chosen = try await customers.lastSelected(
                    session: record.session, customer: customer.id, as: record.caller)
            }
            _ = try await update(id) { [chosen] record in
                if record.shippingAddress == nil, let shipping = customer.shippingAddress {
                    record.shippingAddress = ShippingAddressParams(shipping)
                    record.shippingNeedsVerification = true
                }
                record.options = PaymentContextRecord.options(methods)
                record.selected = record.options.first { $0.id == chosen }?.id
                record.loading = false
                return .didChange
            }
        } catch {
            // Stopped (closed, or the lease went): whoever loads it next starts over.
            if Task.isCancelled { return }
            let failure = Failure(error, describedBy: table.log.failures)
            _ = try? await update(id) { record in
                record.loading = false
                record.loadError = failure
                return .didFailToLoad
            }
        }
        if (try? await table.find(id))?.requestWaitsForLoad == true {
            _ = try? await proceedWithRequest(id)
        }
    }

    /// Applies `mutate` to the latest state and commits it with the event it returns (nil: nothing
    /// changed), answering with the context as it is then.
    @discardableResult
    func update(
        _ id: String, for caller: Caller = .daemon,
        _ mutate: (inout PaymentContextRecord) throws -> PaymentContextEvent?
    ) async throws -> PaymentContextRecord {
        try await apply(id, for: caller, mutate).record
    }

    /// `update`, answering with the whole change. A pending action that ended any way (answered,
    /// finished, closed) loses its deadline.
    @discardableResult
    func apply(
        _ id: String, for caller: Caller = .daemon,
        _ mutate: (inout PaymentContextRecord) throws -> PaymentContextEvent?
    ) async throws -> RecordTable<PaymentContextRecord>.Change {
        let change = try await table.update(id, for: caller, mutate)
        if change.event != nil, let ended = change.before.pending?.id, change.record.pending?.id != ended {
            await work.stop(Self.deadlineLease(ended))
        }
        return change
    }

    func record(_ id: String, _ caller: Caller, open: Bool = false) async throws -> PaymentContextRecord {
        let record = try await table.get(id, for: caller)
        if open, record.status != .open {
            throw DomainError.invalidState(
                .paymentContext, id: id, state: record.status.rawValue, detail: "payment context \(id) is closed")
        }
        return record
    }
}

extension PaymentContexts: Sweepable {
    /// A context is finished when closed, or idle: loaded, no request running, nothing pending.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

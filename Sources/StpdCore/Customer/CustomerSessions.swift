import Foundation
import JSONRPC
import StpdValues
import StripeAPI
import Synchronization

/// Builds the backend of a session from its adapter (the daemon knows the HTTP and Stripe parts).
public protocol CustomerBackendFactory: Sendable {
    func makeBackend(session: String, owner: UInt32, adapter: SessionAdapter) throws -> any CustomerBackend
}

/// Customer sessions: durable, owned by the uid that opened them, each change an event
/// (`CustomerEvent`). The record core keeps the sessions and the per-customer preferences; this
/// service owns the live backends, rebuilt from the stored adapter after a restart.
///
/// An operation reads the session, does its I/O on the backend, then applies what it learned to
/// the session's latest state, refusing (InvalidState) when the session was closed meanwhile.
public final class CustomerSessions: Sendable {
    let table: RecordTable<CustomerSessionRecord>
    let preferences: RecordTable<CustomerPreference>
    private let factory: any CustomerBackendFactory
    private let background: BackgroundWork
    private let now: @Sendable () -> Date
    private let backends = Mutex<[String: any CustomerBackend]>([:])

    public init(
        log: EventLog, factory: any CustomerBackendFactory, background: BackgroundWork,
        now: @escaping @Sendable () -> Date = Date.init, reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        preferences = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.factory = factory
        self.background = background
        self.now = now
    }

    public func open(for caller: Caller, adapter: SessionAdapter, prefetch: Bool = true) async throws
        -> Shown<CustomerSessionRecord>
    {
        let id = ObjectID.make("cses_")
        let backend = try factory.makeBackend(session: id, owner: caller.uid, adapter: adapter)
        backends.withLock { $0[id] = backend }
        let opened = try await table.insert(
            CustomerSessionRecord(id: id, owner: caller.uid, adapter: adapter, createdAt: now()), .opened)
        if prefetch {
            // As STPCustomerContext does on init; an app-answered session must not hold `open` up.
            background.start { [self] in _ = try? await load(id: id, for: caller) }
        }
        return opened
    }

    public func get(id: String, for caller: Caller) async throws -> CustomerSessionRecord {
        try await table.get(id, for: caller)
    }

    public func list(for caller: Caller, status: CustomerSessionStatus?, startingAfter: String?, limit: Int)
        async throws -> ([CustomerSessionRecord], hasMore: Bool)
    {
        let page = try await table.page(
            for: caller, status: status?.rawValue, startingAfter: startingAfter, limit: limit)
        return (page.records, page.hasMore)
    }

    /// Fetches the customer and its payment methods (what prefetch does), recording what was learned.
    @discardableResult
    public func load(id: String, for caller: Caller) async throws -> (Customer, [PaymentMethod]) {
        try await operate(id, caller, "load", .loaded) { backend, _ in
            async let customer = backend.retrieveCustomer()
            async let methods = backend.listPaymentMethods()
            return try await (customer, methods)
        } apply: { record, loaded in
            record.customerId = loaded.0.id
            record.customerFetchedAt = self.now()
            record.paymentMethodsFetchedAt = self.now()
        }.result
    }

    public func retrieveCustomer(id: String, for caller: Caller) async throws -> Customer {
        try await operate(id, caller, "retrieveCustomer", .loaded) { backend, _ in
            try await backend.retrieveCustomer()
        } apply: { record, customer in
            record.customerId = customer.id
            record.customerFetchedAt = self.now()
        }.result
    }

    public func listPaymentMethods(id: String, for caller: Caller) async throws -> [PaymentMethod] {
        try await operate(id, caller, "listPaymentMethods", .loaded) { backend, _ in
            try await backend.listPaymentMethods()
        } apply: { record, _ in
            record.paymentMethodsFetchedAt = self.now()
        }.result
    }

    /// Attaching (and detaching) clears the payment-method cache, whether it succeeds or not.
    public func attach(id: String, paymentMethod: String, for caller: Caller) async throws -> Shown<
        CustomerSessionRecord
    > {
        try await operate(id, caller, "attachPaymentMethod", .paymentMethodAttached, always: Self.forgetMethods) {
            backend, _ in
            try await backend.attachPaymentMethod(id: paymentMethod)
        } apply: { _, _ in
        }.shown
    }

    /// The last selected payment method stays remembered, as STPCustomerContext's detach leaves it:
    /// a detached one is no longer among the options a context loads, so it selects nothing.
    public func detach(id: String, paymentMethod: String, for caller: Caller) async throws -> Shown<
        CustomerSessionRecord
    > {
        try await operate(id, caller, "detachPaymentMethod", .paymentMethodDetached, always: Self.forgetMethods) {
            backend, _ in
            try await backend.detachPaymentMethod(id: paymentMethod)
        } apply: { _, _ in
        }.shown
    }

    /// Stripe keeps no shipping address without a recipient (`shipping[name]` is required), so
    /// one without a name is refused before any request, whichever adapter would carry it.
    public func updateShipping(id: String, shipping: StripeAddress, for caller: Caller) async throws
        -> Shown<CustomerSessionRecord>
    {
        guard !(shipping.name ?? "").isEmpty else {
            throw DomainError.invalidInput(
                input: "shipping.name", detail: "a shipping address needs the recipient's name")
        }
        return try await operate(id, caller, "updateShipping", .shippingUpdated) { backend, _ in
            try await backend.updateShipping(shipping)
        } apply: { _, _ in
        }.shown
    }

    /// Remembers the last selected payment method per customer (the SDK keeps it per customer
    /// id; learning the id may take a customer fetch).
    public func select(id: String, paymentMethod: String?, for caller: Caller) async throws -> Shown<
        CustomerSessionRecord
    > {
        try await operate(id, caller, "selectPaymentMethod", .paymentMethodSelected) { backend, record in
            let customer: String
            if let known = record.customerId {
                customer = known
            } else {
                customer = try await backend.retrieveCustomer().id
            }
            try await savePreference(customer: customer, owner: record.owner, paymentMethod: paymentMethod)
            return customer
        } apply: { record, customer in
            record.customerId = customer
            record.lastSelectedPaymentMethod = paymentMethod
        }.shown
    }

    /// The last payment method selected for `customer` by any session of `owner`.
    public func lastSelected(customer: String, owner: UInt32) async throws -> String? {
        try await preferences.find(CustomerPreference.id(customer, owner))?.paymentMethod
    }

    /// app.foreground: tells the caller's open sessions' live backends (a Stripe session's key
    /// manager fetches an expired ephemeral key again, as the SDK's does on becoming active).
    public func foreground(for caller: Caller) async {
        for session in (try? await table.all(for: caller, status: CustomerSessionStatus.open.rawValue)) ?? [] {
            backends.withLock { $0[session.id] }?.foreground()
        }
    }

    public func clearCache(id: String, for caller: Caller) async throws -> Shown<CustomerSessionRecord> {
        let record = try await openRecord(id, caller)
        try backend(for: record).clearCache()
        return try await table.update(id, for: caller) { record in
            try Self.requireOpen(record)
            Self.forgetMethods(&record)
            record.customerFetchedAt = nil
            return .cacheCleared
        }.shown
    }

    public func close(id: String, for caller: Caller) async throws -> Shown<CustomerSessionRecord> {
        let change = try await table.update(id, for: caller) { record in
            guard record.status == .open else { return nil }
            record.status = .closed
            return .closed
        }
        backends.withLock { $0[id] = nil }
        return change.shown
    }

    /// Runs `body` on an open session's backend, then applies its result to the session's latest
    /// state with `event`; a failure is recorded as `customer.failed`. `always` applies either way.
    private func operate<T: Sendable>(
        _ id: String, _ caller: Caller, _ operation: String, _ event: CustomerEvent,
        always: @escaping (inout CustomerSessionRecord) -> Void = { _ in },
        _ body: (any CustomerBackend, CustomerSessionRecord) async throws -> T,
        apply: @escaping (inout CustomerSessionRecord, T) -> Void
    ) async throws -> (result: T, shown: Shown<CustomerSessionRecord>) {
        let record = try await openRecord(id, caller)
        let backend = try backend(for: record)
        let result: T
        do {
            result = try await body(backend, record)
        } catch {
            let failure: JSONValue = ["operation": .string(operation), "message": .string(String(describing: error))]
            _ = try? await table.update(id, for: caller) { record in
                guard record.status == .open else { return nil }
                always(&record)
                record.lastError = failure
                return .failed
            }
            throw error
        }
        let change = try await table.update(id, for: caller) { record in
            try Self.requireOpen(record, while: operation)
            always(&record)
            apply(&record, result)
            record.lastError = nil
            return event
        }
        return (result, change.shown)
    }

    private static func forgetMethods(_ record: inout CustomerSessionRecord) { record.paymentMethodsFetchedAt = nil }

    func openRecord(_ id: String, _ caller: Caller) async throws -> CustomerSessionRecord {
        let record = try await table.get(id, for: caller)
        try Self.requireOpen(record)
        return record
    }

    private static func requireOpen(_ record: CustomerSessionRecord, while operation: String? = nil) throws {
        guard record.status != .open else { return }
        let detail = operation.map { "customer session \(record.id) was closed while \($0) ran" }
        throw DomainError.invalidState(
            .customerSession, id: record.id, state: record.status.rawValue,
            detail: detail ?? "customer session \(record.id) is closed")
    }

    private func backend(for record: CustomerSessionRecord) throws -> any CustomerBackend {
        if let live = backends.withLock({ $0[record.id] }) { return live }
        let made = try factory.makeBackend(session: record.id, owner: record.owner, adapter: record.adapter)
        return backends.withLock { $0[record.id, default: made] }
    }

    private func savePreference(customer: String, owner: UInt32, paymentMethod: String?) async throws {
        let stamp = now()
        try await preferences.put(
            CustomerPreference(
                id: CustomerPreference.id(customer, owner), owner: owner, customerId: customer,
                paymentMethod: paymentMethod, createdAt: stamp, updatedAt: stamp), .preferenceChanged)
    }
}

extension CustomerSessions: Sweepable {
    /// A session is finished once closed.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization

/// Builds the backend of a session from its adapter (the daemon knows the HTTP and Stripe parts).
public protocol CustomerBackendFactory: Sendable {
    func makeBackend(session: String, owner: UInt32, adapter: CustomerAdapter) throws -> any CustomerBackend
}

/// Customer sessions: durable, owned by the uid that opened them, each change an event
/// (`customer.opened`, `.loaded`, `.paymentMethodAttached`, `.paymentMethodDetached`,
/// `.shippingUpdated`, `.paymentMethodSelected`, `.cacheCleared`, `.failed`, `.closed`).
/// Backends are rebuilt from the stored adapter after a restart.
public final class CustomerSessions: Sendable {
    public static let kind = "customerSession"
    static let preferenceKind = "customerPreference"

    private let log: EventLog
    private let factory: any CustomerBackendFactory
    private let background: BackgroundWork
    private let now: @Sendable () -> Date
    private let backends = Mutex<[String: any CustomerBackend]>([:])

    public init(
        log: EventLog, factory: any CustomerBackendFactory, background: BackgroundWork,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.log = log
        self.factory = factory
        self.background = background
        self.now = now
    }

    public func open(owner: UInt32, adapter: CustomerAdapter, prefetch: Bool = true) async throws -> CustomerSessionView
    {
        let id = ObjectID.make("cses_")
        let backend = try factory.makeBackend(session: id, owner: owner, adapter: adapter)
        backends.withLock { $0[id] = backend }
        let stamp = now()
        let record = Record(id: id, owner: owner, adapter: adapter, createdAt: stamp)
        let view = try await save(record, "customer.opened")
        if prefetch {
            // As STPCustomerContext does on init; an app-answered session must not hold `open` up.
            background.start { [self] in _ = try? await self.load(id: id, viewer: owner) }
        }
        return view
    }

    public func get(id: String, viewer: UInt32?) async throws -> CustomerSessionView {
        try await record(id, viewer).view
    }

    public func list(viewer: UInt32?) async throws -> [CustomerSessionView] {
        try await log.store.objects(kind: Self.kind).filter { viewer == nil || $0.ownerUID == viewer }
            .map { try Record.decode($0).view }
    }

    /// Fetches the customer and its payment methods (what prefetch does), recording what was learned.
    @discardableResult
    public func load(id: String, viewer: UInt32?) async throws -> (Customer, [PaymentMethod]) {
        try await operate(id, viewer, "load", event: "customer.loaded") { backend, record in
            async let customer = backend.retrieveCustomer()
            async let methods = backend.listPaymentMethods()
            let loaded = try await (customer, methods)
            record.customerId = loaded.0.id
            record.customerFetchedAt = now()
            record.paymentMethodsFetchedAt = now()
            return loaded
        }
    }

    public func retrieveCustomer(id: String, viewer: UInt32?) async throws -> Customer {
        try await operate(id, viewer, "retrieveCustomer", event: "customer.loaded") { backend, record in
            let customer = try await backend.retrieveCustomer()
            record.customerId = customer.id
            record.customerFetchedAt = now()
            return customer
        }
    }

    public func listPaymentMethods(id: String, viewer: UInt32?) async throws -> [PaymentMethod] {
        try await operate(id, viewer, "listPaymentMethods", event: "customer.loaded") { backend, record in
            let methods = try await backend.listPaymentMethods()
            record.paymentMethodsFetchedAt = now()
            return methods
        }
    }

    public func attach(id: String, paymentMethod: String, viewer: UInt32?) async throws -> CustomerSessionView {
        try await operateView(id, viewer, "attachPaymentMethod", event: "customer.paymentMethodAttached") {
            backend, record in
            defer { record.paymentMethodsFetchedAt = nil }
            try await backend.attachPaymentMethod(id: paymentMethod)
        }
    }

    public func detach(id: String, paymentMethod: String, viewer: UInt32?) async throws -> CustomerSessionView {
        try await operateView(id, viewer, "detachPaymentMethod", event: "customer.paymentMethodDetached") {
            backend, record in
            defer { record.paymentMethodsFetchedAt = nil }
            try await backend.detachPaymentMethod(id: paymentMethod)
            if record.lastSelectedPaymentMethod == paymentMethod { record.lastSelectedPaymentMethod = nil }
        }
    }

    public func updateShipping(id: String, shipping: StripeAddress, viewer: UInt32?) async throws -> CustomerSessionView
    {
        try await operateView(id, viewer, "updateShipping", event: "customer.shippingUpdated") { backend, _ in
            try await backend.updateShipping(shipping)
        }
    }

    /// Remembers the last selected payment method per customer (the SDK keeps it per customer
    /// id; learning the id may take a customer fetch).
    public func select(id: String, paymentMethod: String?, viewer: UInt32?) async throws -> CustomerSessionView {
        try await operateView(id, viewer, "selectPaymentMethod", event: "customer.paymentMethodSelected") {
            backend, record in
            if record.customerId == nil { record.customerId = try await backend.retrieveCustomer().id }
            let customer = record.customerId!
            record.lastSelectedPaymentMethod = paymentMethod
            try await savePreference(customer: customer, owner: record.owner, paymentMethod: paymentMethod)
        }
    }

    /// The last payment method selected for `customer` by any session of `owner`.
    public func lastSelected(customer: String, owner: UInt32) async throws -> String? {
        try await log.store.object(id: Self.preferenceID(customer, owner))?.state["paymentMethod"]?.stringValue
    }

    /// app.foreground: as the SDK's key manager on becoming active, sessions whose ephemeral key
    /// has expired fetch a new one now (at most once an hour), so the next call does not wait.
    public func foreground(viewer: UInt32?) async {
        for session in (try? await list(viewer: viewer)) ?? [] where session.status == "open" {
            let backend = backends.withLock { $0[session.id] }
            ((backend as? StripeCustomerContext)?.keys as? EphemeralKeyManager)?.refreshEagerly()
        }
    }

    public func clearCache(id: String, viewer: UInt32?) async throws -> CustomerSessionView {
        var record = try await record(id, viewer, open: true)
        try backend(for: record).clearCache()
        record.customerFetchedAt = nil
        record.paymentMethodsFetchedAt = nil
        return try await save(record, "customer.cacheCleared")
    }

    public func close(id: String, viewer: UInt32?) async throws -> CustomerSessionView {
        var record = try await record(id, viewer)
        guard record.status == "open" else { return record.view }
        record.status = "closed"
        backends.withLock { $0[id] = nil }
        return try await save(record, "customer.closed")
    }

    /// Runs an operation on an open session's backend and records its outcome either way (what
    /// `body` changed in the record is kept even when it throws: inout writes back).
    private func operate<T: Sendable>(
        _ id: String, _ viewer: UInt32?, _ operation: String, event: String,
        _ body: (any CustomerBackend, inout Record) async throws -> T
    ) async throws -> T {
        try await operateSaving(id, viewer, operation, event: event, body).result
    }

    /// The same, answering with the session as saved.
    private func operateView(
        _ id: String, _ viewer: UInt32?, _ operation: String, event: String,
        _ body: (any CustomerBackend, inout Record) async throws -> Void
    ) async throws -> CustomerSessionView {
        try await operateSaving(id, viewer, operation, event: event, body).view
    }

    private func operateSaving<T: Sendable>(
        _ id: String, _ viewer: UInt32?, _ operation: String, event: String,
        _ body: (any CustomerBackend, inout Record) async throws -> T
    ) async throws -> (result: T, view: CustomerSessionView) {
        var record = try await record(id, viewer, open: true)
        let backend = try backend(for: record)
        do {
            let result = try await body(backend, &record)
            record.lastError = nil
            return (result, try await save(record, event))
        } catch {
            record.lastError = ["operation": .string(operation), "message": .string(String(describing: error))]
            _ = try? await save(record, "customer.failed")
            throw error
        }
    }

    private func backend(for record: Record) throws -> any CustomerBackend {
        if let live = backends.withLock({ $0[record.id] }) { return live }
        let made = try factory.makeBackend(session: record.id, owner: record.owner, adapter: record.adapter)
        return backends.withLock { $0[record.id, default: made] }
    }

    private func record(_ id: String, _ viewer: UInt32?, open: Bool = false) async throws -> Record {
        guard let stored = try await log.store.object(id: id), stored.kind == Self.kind,
            viewer == nil || stored.ownerUID == viewer
        else { throw StpdErrors.notFound("no customer session \(id)", data: ["session": .string(id)]) }
        let record = try Record.decode(stored)
        if open, record.status != "open" {
            throw StpdErrors.invalidState("customer session \(id) is closed", data: ["state": .string(record.status)])
        }
        return record
    }

    @discardableResult
    private func save(_ record: Record, _ event: String) async throws -> CustomerSessionView {
        var record = record
        record.updatedAt = now()
        let view = record.view
        let object = StoredObject(
            id: record.id, kind: Self.kind, ownerUID: record.owner, state: try JSONCoding.value(of: record),
            createdAt: record.createdAt, updatedAt: record.updatedAt)
        try await log.apply([StateChange(object: object, eventType: event, publicState: try JSONCoding.value(of: view))]
        )
        return view
    }

    private func savePreference(customer: String, owner: UInt32, paymentMethod: String?) async throws {
        let stamp = now()
        let state: JSONValue = [
            "customerId": .string(customer), "paymentMethod": paymentMethod.map(JSONValue.string) ?? .null,
        ]
        let object = StoredObject(
            id: Self.preferenceID(customer, owner), kind: Self.preferenceKind, ownerUID: owner, state: state,
            createdAt: stamp, updatedAt: stamp)
        try await log.apply([StateChange(object: object, eventType: "customer.preferenceChanged")])
    }

    static func preferenceID(_ customer: String, _ owner: UInt32) -> String { "cpref_\(owner)_\(customer)" }

    /// What is stored: the view's fields plus the adapter with its credentials.
    struct Record: Codable, Sendable {
        var id: String
        var owner: UInt32
        var status = "open"
        var adapter: CustomerAdapter
        var customerId: String?
        var lastSelectedPaymentMethod: String?
        var customerFetchedAt: Date?
        var paymentMethodsFetchedAt: Date?
        var lastError: JSONValue?
        var createdAt: Date
        var updatedAt: Date

        init(id: String, owner: UInt32, adapter: CustomerAdapter, createdAt: Date) {
            self.id = id
            self.owner = owner
            self.adapter = adapter
            self.createdAt = createdAt
            self.updatedAt = createdAt
        }

        static func decode(_ stored: StoredObject) throws -> Record {
            try JSONCoding.typed(Record.self, from: stored.state)
        }

        var view: CustomerSessionView {
            CustomerSessionView(
                id: id, status: status, adapter: adapter.redacted, customerId: customerId,
                lastSelectedPaymentMethod: lastSelectedPaymentMethod,
                customerFetchedAt: customerFetchedAt?.formatted(.iso8601),
                paymentMethodsFetchedAt: paymentMethodsFetchedAt?.formatted(.iso8601), lastError: lastError,
                createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
        }
    }
}

extension CustomerSessions: Sweepable {
    /// A session is finished once closed.
    public func sweep(before cutoff: Date) async throws -> Int {
        let changes = try await log.store.objects(kind: Self.kind).compactMap { stored -> StateChange? in
            guard stored.updatedAt < cutoff, let record = try? Record.decode(stored), record.status == "closed" else {
                return nil
            }
            return StateChange(
                object: stored, eventType: "customer.removed", removesObject: true,
                publicState: try JSONCoding.value(of: record.view))
        }
        if !changes.isEmpty { try await log.apply(changes) }
        return changes.count
    }
}

import Foundation
import JSONRPC
import StripeAPI
import Synchronization

@testable import StpdCore

/// A payment context's customer session (the SDK's API adapter) scripted by the test: one customer,
/// its PaymentMethods, failures queued per operation, gates that hold an operation, every call
/// recorded in order, and the "last selected PaymentMethod" memory per customer (spec §5.4).
final class FakeContextCustomer: PaymentContextCustomer {
    enum Op: String, Sendable, Hashable, CaseIterable {
        case clearCache, retrieveCustomer, listPaymentMethods, attach, detach, updateShipping, select, lastSelected
    }

    struct Call: Sendable, Hashable, CustomStringConvertible {
        var op: Op
        /// The PaymentMethod (attach, detach, select: "nil" for none), the customer (lastSelected),
        /// the address's line1 (updateShipping).
        var argument: String?
        var session: String
        var owner: UInt32

        var description: String { argument.map { "\(op.rawValue)(\($0))" } ?? op.rawValue }
    }

    private struct State {
        var customer: JSONValue
        var methods: [JSONValue]
        var failures: [Op: [any Error]] = [:]
        var gates: [Op: Gate] = [:]
        var calls: [Call] = []
        var lastSelected: [String: String] = [:]
        var shippingUpdates: [StripeAddress] = []
        var watchers: [(op: Op, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    init(customer: JSONValue = FakeContextCustomer.customer(), methods: [JSONValue] = []) {
        state = Mutex(State(customer: customer, methods: methods))
    }

    // MARK: Scripting

    /// A customer as Stripe returns it, with a shipping address when `shipping` is given.
    static func customer(id: String = "cus_fake", shipping: JSONValue? = nil) -> JSONValue {
        var json: [String: JSONValue] = ["id": .string(id), "object": "customer"]
        if let shipping { json["shipping"] = shipping }
        return .object(json)
    }

    /// A card PaymentMethod ("Visa 4242" style label from `brand` and `last4`).
    static func card(_ id: String, brand: String = "visa", last4: String = "4242") -> JSONValue {
        [
            "id": .string(id), "object": "payment_method", "type": "card",
            "card": ["brand": .string(brand), "last4": .string(last4), "exp_month": 12, "exp_year": 2030],
        ]
    }

    /// A PaymentMethod of another type (the context drops these).
    static func method(_ id: String, type: String) -> JSONValue {
        ["id": .string(id), "object": "payment_method", "type": .string(type)]
    }

    var customerID: String { state.withLock { $0.customer["id"]?.stringValue ?? "" } }

    func setCustomer(_ customer: JSONValue) { state.withLock { $0.customer = customer } }

    /// The next `times` calls of `op` throw `error`.
    func fail(_ op: Op, with error: any Error, times: Int = 1) {
        state.withLock { $0.failures[op, default: []].append(contentsOf: Array(repeating: error, count: times)) }
    }

    /// Calls of `op` wait on the returned gate (after being recorded) until the test opens it.
    func hold(_ op: Op) -> Gate {
        let gate = Gate()
        state.withLock { $0.gates[op] = gate }
        return gate
    }

    /// Sets the customer's remembered last selected PaymentMethod.
    func remember(_ paymentMethod: String?, for customer: String? = nil) {
        state.withLock { s in
            let id = customer ?? s.customer["id"]?.stringValue ?? ""
            s.lastSelected[id] = paymentMethod
        }
    }

    // MARK: Reading

    var calls: [Call] { state.withLock { $0.calls } }
    var ops: [Op] { calls.map(\.op) }
    func calls(_ op: Op) -> [Call] { calls.filter { $0.op == op } }
    var shippingUpdates: [StripeAddress] { state.withLock { $0.shippingUpdates } }
    func lastSelectedMemory(for customer: String? = nil) -> String? {
        state.withLock { s in s.lastSelected[customer ?? s.customer["id"]?.stringValue ?? ""] }
    }

    /// Returns once `op` has been called `count` times in all (the cue that background work got there).
    func called(_ op: Op, times count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s in
                if s.calls.filter({ $0.op == op }).count >= count { return true }
                s.watchers.append((op, count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    // MARK: PaymentContextCustomer

    /// Records the call, wakes watchers, waits on a gate, then throws a queued failure if any.
    private func enter(_ op: Op, _ argument: String?, session: String, owner: UInt32) async throws {
        let (ready, gate) = state.withLock { s -> ([CheckedContinuation<Void, Never>], Gate?) in
            s.calls.append(Call(op: op, argument: argument, session: session, owner: owner))
            let count = s.calls.filter { $0.op == op }.count
            let ready = s.watchers.filter { $0.op == op && $0.count <= count }.map(\.continuation)
            s.watchers.removeAll { $0.op == op && $0.count <= count }
            return (ready, s.gates[op])
        }
        for watcher in ready { watcher.resume() }
        if let gate { await gate.wait() }
        let failure = state.withLock { s -> (any Error)? in
            guard var queue = s.failures[op], !queue.isEmpty else { return nil }
            let first = queue.removeFirst()
            s.failures[op] = queue
            return first
        }
        if let failure { throw failure }
    }

    /// Every fake session is open (closing one is CustomerSessions' business, tested there).
    func requireOpen(session: String, as caller: Caller) async throws {}

    func clearCache(session: String, as caller: Caller) async throws {
        try await enter(.clearCache, nil, session: session, owner: caller.uid)
    }

    func retrieveCustomer(session: String, as caller: Caller) async throws -> Customer {
        try await enter(.retrieveCustomer, nil, session: session, owner: caller.uid)
        return try Customer(json: state.withLock { $0.customer }, codingPath: [])
    }

    func listPaymentMethods(session: String, as caller: Caller) async throws -> [PaymentMethod] {
        try await enter(.listPaymentMethods, nil, session: session, owner: caller.uid)
        return try state.withLock { $0.methods }.map { try PaymentMethod(json: $0, codingPath: []) }
    }

    func attach(session: String, paymentMethod: String, as caller: Caller) async throws {
        try await enter(.attach, paymentMethod, session: session, owner: caller.uid)
    }

    func detach(session: String, paymentMethod: String, as caller: Caller) async throws {
        try await enter(.detach, paymentMethod, session: session, owner: caller.uid)
        state.withLock { s in s.methods.removeAll { $0["id"]?.stringValue == paymentMethod } }
    }

    func updateShipping(session: String, address: StripeAddress, as caller: Caller) async throws {
        // Recorded before the call is announced, so a test woken by `called(.updateShipping)` sees it.
        state.withLock { $0.shippingUpdates.append(address) }
        try await enter(.updateShipping, address.line1, session: session, owner: caller.uid)
    }

    func select(session: String, paymentMethod: String?, as caller: Caller) async throws {
        try await enter(.select, paymentMethod ?? "nil", session: session, owner: caller.uid)
        state.withLock { s in
            let id = s.customer["id"]?.stringValue ?? ""
            s.lastSelected[id] = paymentMethod
        }
    }

    func lastSelected(session: String, customer: String, as caller: Caller) async throws -> String? {
        try await enter(.lastSelected, customer, session: session, owner: caller.uid)
        return state.withLock { $0.lastSelected[customer] }
    }
}

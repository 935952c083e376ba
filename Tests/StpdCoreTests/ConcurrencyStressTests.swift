import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization
import Testing

@testable import StpdCore

/// Many clients issuing conflicting operations on the same objects at once, over the SQLite
/// store. After each round every object's events must be a sequence its state machine allows,
/// its last event must carry its stored state, and nothing finished may have come back.
/// Bounded by count (rounds x objects x operations), not by time.
@Suite("Concurrency stress")
struct ConcurrencyStressTests {
    /// A customer backend that yields a few times per call, so calls interleave.
    struct YieldingBackend: CustomerBackend {
        let gate: Gate?
        func pause() async {
            if let gate { await gate.wait() }
            for _ in 0..<Int.random(in: 0...3) { await Task.yield() }
        }
        func retrieveCustomer() async throws -> Customer {
            await pause()
            return try Customer(json: FakeContextCustomer.customer(id: "cus_1"), codingPath: [])
        }
        func listPaymentMethods() async throws -> [PaymentMethod] {
            await pause()
            return []
        }
        func attachPaymentMethod(id: String) async throws { await pause() }
        func detachPaymentMethod(id: String) async throws { await pause() }
        func updateShipping(_ shipping: StripeAddress) async throws { await pause() }
        func clearCache() {}
    }

    struct Factory: CustomerBackendFactory {
        let gate: Gate?
        func makeBackend(session: String, owner: UInt32, adapter: SessionAdapter) throws -> any CustomerBackend {
            YieldingBackend(gate: gate)
        }
    }

    static let owner = Caller(uid: 1000)
    static let adapter = SessionAdapter(kind: .app)

    func sessions(_ store: any StateStore, gate: Gate? = nil) async throws -> (CustomerSessions, EventLog) {
        let log = try await EventLog(store: store, views: DomainViews())
        return (CustomerSessions(log: log, factory: Factory(gate: gate), background: BackgroundWork()), log)
    }

    /// The regression of the record core: a retrieve that finishes after a close must not write
    /// the session back open (it used to, with events opened, closed, loaded).
    @Test(arguments: StoreKind.allCases)
    func closeWhileRetrieveRunsIsNotUndone(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let gate = Gate()
            let (sessions, log) = try await sessions(store, gate: gate)
            let session = try await sessions.open(for: Self.owner, adapter: Self.adapter, prefetch: false)
            let retrieve = Task { try await sessions.retrieveCustomer(id: session.id, for: Self.owner) }
            await gate.arrivals(1)
            #expect(try await sessions.close(id: session.id, for: Self.owner).status == .closed)
            gate.open()
            let error = await domainError { try await retrieve.value }
            #expect(error?.name == "invalidState")
            #expect(try await sessions.get(id: session.id, for: Self.owner).status == .closed)
            let types = try await log.store.events(after: 0, limit: 100).map(\.type)
            #expect(types == ["customer.opened", "customer.closed"])
        }
    }

    /// Two operations that both awaited I/O: each applies what it learned to the latest state,
    /// so neither loses the other's fields.
    @Test(arguments: StoreKind.allCases)
    func concurrentOperationsKeepEachOthersFields(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let gate = Gate()
            let (sessions, _) = try await sessions(store, gate: gate)
            let session = try await sessions.open(for: Self.owner, adapter: Self.adapter, prefetch: false)
            async let customer = sessions.retrieveCustomer(id: session.id, for: Self.owner)
            async let methods = sessions.listPaymentMethods(id: session.id, for: Self.owner)
            await gate.arrivals(2)
            gate.open()
            _ = try await (customer, methods)
            let view = try await sessions.get(id: session.id, for: Self.owner)
            #expect(view.customerId == "cus_1")
            #expect(view.customerFetchedAt != nil)
            #expect(view.paymentMethodsFetchedAt != nil)
        }
    }

    @Test func customerSessionsUnderConflictingCalls() async throws {
        try await StoreKind.sqlite.withStore { store in
            let (sessions, log) = try await sessions(store)
            for _ in 0..<4 {
                var ids: [String] = []
                for _ in 0..<8 {
                    ids.append(try await sessions.open(for: Self.owner, adapter: Self.adapter, prefetch: false).id)
                }
                await withTaskGroup(of: Void.self) { group in
                    for id in ids {
                        for n in 0..<6 {
                            group.addTask {
                                switch n {
                                case 0: _ = try? await sessions.close(id: id, for: Self.owner)
                                case 1: _ = try? await sessions.retrieveCustomer(id: id, for: Self.owner)
                                case 2: _ = try? await sessions.attach(id: id, paymentMethod: "pm_1", for: Self.owner)
                                case 3:
                                    let shipping = try? StripeAddress(
                                        json: ["name": "Jo", "line1": "1 Main"], codingPath: [])
                                    if let shipping {
                                        _ = try? await sessions.updateShipping(
                                            id: id, shipping: shipping, for: Self.owner)
                                    }
                                case 4: _ = try? await sessions.select(id: id, paymentMethod: "pm_1", for: Self.owner)
                                default: _ = try? await sessions.clearCache(id: id, for: Self.owner)
                                }
                            }
                        }
                    }
                }
                for id in ids {
                    let types = try await eventTypes(log, id)
                    #expect(types.first == "customer.opened")
                    #expect(types.last == "customer.closed", "close always lands: \(types)")
                    #expect(types.filter { $0 == "customer.closed" }.count == 1)
                    let stored = try #require(try await sessions.table.find(id))
                    try await expectLastEventCarries(log, id, stored)
                }
            }
        }
    }

    final class RedirectWorld: Sendable {
        let api = FakePaymentsAPI()
        let log: EventLog
        let sources: SourceService
        let redirects: RedirectSessions
        let runner: Task<Void, Never>

        init(_ store: any StateStore) async throws {
            log = try await EventLog(store: store, views: DomainViews())
            let background = BackgroundWork()
            sources = SourceService(api: api, log: log, background: background)
            let intents = IntentPollers(api: api, log: log, background: background)
            redirects = RedirectSessions(
                api: api, sources: sources, intents: intents, opener: nil, log: log, background: background)
            sources.follow(with: redirects)
            intents.follow(with: redirects)
            runner = Task { [background] in await background.run() }
        }

        deinit { runner.cancel() }

        /// A started session whose return URL carries `order`.
        func started(order: Int, mode: RedirectMode? = nil) async throws -> String {
            let id = api.addSource(status: "chargeable", returnURL: "myshop://done?order=\(order)")
            _ = try await sources.retrieve(id: id, clientSecret: "\(id)_secret", for: ConcurrencyStressTests.owner)
            let session = try await redirects.create(
                for: ConcurrencyStressTests.owner, sourceID: id, clientSecret: nil, followUpTimeout: 1)
            return try await redirects.start(id: session.id, for: ConcurrencyStressTests.owner, mode: mode, opener: nil)
                .id
        }
    }

    /// cancel vs handle-url vs app.foreground on sessions in progress: each ends once, either way.
    @Test func redirectSessionsUnderConflictingCalls() async throws {
        try await StoreKind.sqlite.withStore { store in
            let world = try await RedirectWorld(store)
            for round in 0..<4 {
                var ids: [Int: String] = [:]
                for n in 0..<6 { ids[n] = try await world.started(order: round * 100 + n) }
                let handled = Recorded<String>()
                await withTaskGroup(of: Void.self) { group in
                    for (n, id) in ids {
                        let url = "myshop://done?order=\(round * 100 + n)&source=src_x"
                        for _ in 0..<2 {
                            group.addTask {
                                if let session = try? await world.redirects.handleURL(url, for: Self.owner) {
                                    handled.append(session)
                                }
                            }
                        }
                        group.addTask { _ = try? await world.redirects.cancel(id: id, for: Self.owner) }
                        group.addTask { _ = try? await world.redirects.foreground(for: Self.owner) }
                    }
                }
                #expect(Set(handled.all).count == handled.all.count, "no session handled twice")
                for id in ids.values {
                    try await eventually {
                        let record = try await world.redirects.table.find(id)
                        return record?.status == .cancelled || record?.outcome != nil
                    }
                    let types = try await eventTypes(log: world.log, id)
                    #expect(Array(types.prefix(2)) == ["redirect.created", "redirect.started"])
                    let ends = types.filter { $0 == "redirect.completed" || $0 == "redirect.cancelled" }
                    #expect(ends.count == 1, "one end: \(types)")
                    if types.contains("redirect.cancelled") { #expect(types.last == "redirect.cancelled") }
                    let stored = try #require(try await world.redirects.table.find(id))
                    try await expectLastEventCarries(world.log, id, stored)
                }
            }
        }
    }

    /// source.stopPolling vs a poll result arriving: after pollStopped nothing of that poll.
    @Test func sourcePollsStoppedWhileResultsArrive() async throws {
        try await StoreKind.sqlite.withStore { store in
            let world = try await RedirectWorld(store)
            for _ in 0..<3 {
                var ids: [String] = []
                for _ in 0..<8 {
                    let id = world.api.addSource(status: "chargeable")
                    _ = try await world.sources.retrieve(id: id, clientSecret: "\(id)_secret", for: Self.owner)
                    ids.append(id)
                }
                await withTaskGroup(of: Void.self) { group in
                    for id in ids {
                        group.addTask {
                            _ = try? await world.sources.startPoll(
                                id: id, for: Self.owner, clientSecret: nil, timeout: 5)
                            for _ in 0..<Int.random(in: 0...3) { await Task.yield() }
                            _ = try? await world.sources.stopPoll(id: id, for: Self.owner)
                        }
                    }
                }
                for id in ids {
                    try await eventually {
                        let poll = try await world.sources.get(id: id, for: Self.owner).poll
                        return poll?.status == .stopped || poll?.status == .finished
                    }
                    let types = try await eventTypes(log: world.log, id).filter { $0 != "source.retrieved" }
                    #expect(types.first == "source.pollStarted")
                    let ends = types.filter { $0 == "source.pollStopped" || $0 == "source.pollFinished" }
                    #expect(ends.count == 1, "one end: \(types)")
                    #expect(types.last == ends.first)
                    let stored = try #require(try await world.sources.table.find(id))
                    try await expectLastEventCarries(world.log, id, stored)
                }
            }
        }
    }

    /// Two answers to one pending action at once: one wins, the other is PendingActionGone; and
    /// selecting an option while it is removed leaves a selection that is one of the options.
    @Test func paymentContextsUnderConflictingCalls() async throws {
        let world = try await PaymentContextsTests.World(customer: PaymentContextsTests.cards())
        for _ in 0..<6 {
            let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
            let pending = try #require(try await world.requestPayment(view.id).pending)
            let outcomes = await withTaskGroup(of: String?.self) { group in
                for status in [PendingActionAnswer.success, .error, .userCancellation] {
                    group.addTask { await Self.outcome { try await world.answer(pending.id, status) } }
                }
                group.addTask {
                    await Self.outcome {
                        try await world.contexts.select(id: view.id, for: Self.owner, paymentMethod: "pm_mc")
                    }
                }
                group.addTask {
                    await Self.outcome {
                        try await world.contexts.remove(id: view.id, for: Self.owner, paymentMethod: "pm_mc")
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "ok" }.count >= 1)
            let types = try await eventTypes(world.log, view.id)
            #expect(types.filter { $0 == "paymentContext.didFinish" }.count == 1, "one answer wins: \(types)")
            let stored = try #require(try await world.contexts.table.find(view.id))
            #expect(stored.selected == nil || stored.options.contains { $0.id == stored.selected })
            #expect(stored.pending == nil)
            try await expectLastEventCarries(world.log, view.id, stored)
        }
    }

    /// "ok" when `body` succeeds, else the name of its domain error.
    static func outcome<T>(_ body: () async throws -> T) async -> String? {
        do {
            _ = try await body()
            return "ok"
        } catch let error as DomainError {
            return error.name
        } catch {
            return nil
        }
    }

    func eventTypes(_ log: EventLog, _ id: String) async throws -> [String] {
        try await eventTypes(log: log, id)
    }

    func eventTypes(log: EventLog, _ id: String) async throws -> [String] {
        try await log.store.events(after: 0, limit: 100_000).filter { $0.objectId == id }.map(\.type)
    }

    func expectLastEventCarries<R: DurableRecord>(_ log: EventLog, _ id: String, _ record: R) async throws {
        let last = try await log.store.events(after: 0, limit: 100_000).last { $0.objectId == id }
        #expect(last?.object == (try record.publicState(log.views)), "the last event of \(id) carries its stored state")
    }

    /// Waits (bounded) until `condition` holds, for what background work finishes.
    func eventually(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<500 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("condition never held")
    }
}

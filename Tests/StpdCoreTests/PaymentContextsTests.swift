import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization
import Testing

@testable import StpdCore

/// Payment contexts (the SDK's STPPaymentContext, behaviour spec §4) over a scripted customer
/// session, a scripted Stripe, an in-memory store and a manual clock: nothing sleeps; background
/// work (loading, confirming, saving the address) is awaited through its events or the fake's calls,
/// and pending-action deadlines pass when the test advances the clock.
@Suite(.timeLimit(.minutes(1)))
struct PaymentContextsTests {
    /// Counts BackgroundWork jobs (began/ended), so a test can wait for every job to end.
    final class Jobs: Sendable {
        private struct State {
            var active = 0
            var watchers: [UUID: CheckedContinuation<Bool, Never>] = [:]
        }

        private let state = Mutex(State())

        func began() { state.withLock { $0.active += 1 } }

        func ended() {
            let ready = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
                s.active -= 1
                guard s.active == 0 else { return [] }
                defer { s.watchers = [:] }
                return Array(s.watchers.values)
            }
            for watcher in ready { watcher.resume(returning: true) }
        }

        var active: Int { state.withLock { $0.active } }

        /// True once no job runs; false if some job still runs after `limit` of real time (which
        /// only elapses when the test is about to fail).
        func idle(within limit: Duration = .seconds(5)) async -> Bool {
            let id = UUID()
            return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s in
                    if s.active == 0 { return true }
                    s.watchers[id] = continuation
                    return false
                }
                if now { return continuation.resume(returning: true) }
                Task { [self] in
                    try? await ContinuousClock().sleep(for: limit)
                    state.withLock { $0.watchers.removeValue(forKey: id) }?.resume(returning: false)
                }
            }
        }
    }

    struct NoMatchingEvent: Error {}

    /// Resumes its continuation once, with whichever result comes first.
    final class Once: Sendable {
        private let continuation = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation.withLock { $0 = continuation } }
        func resume(_ result: Bool) { continuation.withLock { $0.take() }?.resume(returning: result) }
    }

    /// Runs a wait that cannot be cancelled (a fake's or the manual clock's cue) in its own task and
    /// gives up after `limit` of real time, so a missing cue fails the test instead of hanging the run.
    static func within(_ what: String, limit: Duration = .seconds(10), _ wait: @escaping @Sendable () async -> Void)
        async
    {
        let arrived = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = Once(continuation)
            Task {
                await wait()
                once.resume(true)
            }
            Task {
                try? await ContinuousClock().sleep(for: limit)
                once.resume(false)
            }
        }
        if !arrived { Issue.record("gave up waiting for \(what)") }
    }

    final class World: Sendable {
        let api: FakePaymentsAPI
        let customer: FakeContextCustomer
        let store: InMemoryStateStore
        let clock: ManualClock
        let jobs = Jobs()
        let log: EventLog
        let background: BackgroundWork
        let sources: SourceService
        let intents: IntentPollers
        let redirects: RedirectSessions
        let contexts: PaymentContexts
        let work: LeasedWork
        let runner: Task<Void, Never>

        /// Wired as `Daemon.Parts` wires them; `now` follows the manual clock from `t0`.
        init(
            customer: FakeContextCustomer = FakeContextCustomer(), api: FakePaymentsAPI = FakePaymentsAPI(),
            store: InMemoryStateStore = InMemoryStateStore(), clock: ManualClock = ManualClock(),
            timeout: Double = 600, companyName: String? = "Shop", cardMetadata: CardMetadataLookup? = nil
        ) async throws {
            self.customer = customer
            self.api = api
            self.store = store
            self.clock = clock
            log = try await EventLog(store: store, views: DomainViews())
            background = BackgroundWork(began: { [jobs] in jobs.began() }, ended: { [jobs] in jobs.ended() })
            work = LeasedWork(background: background)
            sources = SourceService(api: api, log: log, background: background, clock: clock, work: work)
            intents = IntentPollers(
                api: api, log: log, background: background, clock: clock,
                now: { [clock] in t0.addingTimeInterval(Double(clock.now.offset.components.seconds)) }, work: work)
            redirects = RedirectSessions(
                api: api, sources: sources, intents: intents, opener: nil, log: log, background: background, work: work)
            sources.follow(with: redirects)
            intents.follow(with: redirects)
            contexts = PaymentContexts(
                customers: customer, api: api, redirects: redirects, log: log, background: background,
                pendingActionTimeout: timeout, companyName: { _ in companyName }, clock: clock,
                now: { [clock] in t0.addingTimeInterval(Double(clock.now.offset.components.seconds)) }, work: work,
                cardMetadata: cardMetadata)
            redirects.follow(with: contexts)
            intents.follow(with: contexts)
            runner = Task { [background] in await background.run() }
        }

        deinit { runner.cancel() }

        /// What a starting daemon does (`Daemon.resume`): the work the store says must run starts again.
        func resume() async throws { try await work.adoptAll() }

        /// The "process" ends: background work (deadline timers included) stops.
        func shutdown() async {
            runner.cancel()
            await runner.value
        }

        /// The latest event's seq: pass as `since` to see only what comes after.
        func mark() async throws -> Int64 { try await log.store.eventBounds().latestSeq }

        /// Creates a context as uid 1000 and waits until loading has ended (either way).
        func create(_ terms: PaymentContextTerms = .init(session: "cs_1"), owner: UInt32 = 1000) async throws
            -> PaymentContextRecord
        {
            let since = try await mark()
            let created = try await contexts.create(for: Caller(uid: owner), terms)
            #expect(created.loading)
            return try await until(
                created.id, since: since, types: ["paymentContext.didChange", "paymentContext.didFailToLoad"]
            ) {
                !$0.loading
            }
        }

        /// The record carried by the first event after `since` of one of `types` for which `predicate`
        /// holds (`DomainViews`: an event carries the record itself).
        func until(
            _ id: String, since: Int64, types: [String]? = nil,
            _ predicate: (PaymentContextRecord) -> Bool = { _ in true }
        ) async throws -> PaymentContextRecord {
            var cursor = since
            while true {
                let found = try await log.wait(
                    since: cursor, filter: EventFilter(objectIds: [id], types: types), limit: 100, timeout: .seconds(10)
                )
                guard !found.events.isEmpty else {
                    Issue.record("no \(types ?? ["event"]) for \(id) after \(since)")
                    throw NoMatchingEvent()
                }
                for event in found.events {
                    let record = try JSONCoding.typed(PaymentContextRecord.self, from: event.object)
                    if predicate(record) { return record }
                }
                cursor = found.next
            }
        }

        /// The types of the events of context `id` after `since`.
        func types(_ id: String, since: Int64 = 0) async throws -> [String] {
            try await log.wait(since: since, filter: EventFilter(objectIds: [id]), limit: 10_000, timeout: .zero).events
                .map(\.type)
        }

        func requestPayment(_ id: String, viewer: UInt32 = 1000, intent: String? = nil) async throws
            -> PaymentContextRecord
        {
            try await contexts.requestPayment(
                id: id, for: Caller(uid: viewer), paymentIntent: intent.map { ($0, nil) })
        }

        func answer(
            _ action: String?, _ status: PendingActionAnswer, by uid: UInt32 = 1000,
            error: AppRequestFailure? = nil,
            methods: [ShippingMethodOffer]? = nil, selected: String? = nil
        ) async throws -> PaymentContextRecord {
            try await contexts.answer(
                for: Caller(uid: uid),
                .init(
                    action: action ?? "pact_none", status: status, error: error, shippingMethods: methods,
                    selectedShippingMethod: selected))
        }
    }

    // MARK: Fixtures

    static let berlinJSON: JSONValue = [
        "name": "Grace Hopper", "phone": "+49 30 1234567",
        "address": ["line1": "Alexanderplatz 2", "city": "Berlin", "postal_code": "10178", "country": "DE"],
    ]
    static let berlin = ShippingAddressParams(
        name: "Grace Hopper", phone: "+49 30 1234567",
        address: .init(line1: "Alexanderplatz 2", city: "Berlin", postalCode: "10178", country: "DE"))
    static let home = ShippingAddressParams(
        name: "Ada Lovelace", phone: "415-555-0100", email: "ada@example.com",
        address: .init(
            line1: "1 Market St", line2: "Suite 5", city: "San Francisco", state: "CA", postalCode: "94107",
            country: "US"))
    static let methods = [
        ShippingMethodOffer(identifier: "std", label: "Standard", amount: 500),
        ShippingMethodOffer(identifier: "exp", label: "Express", detail: "Tomorrow", amount: 1500),
    ]

    static func cards() -> FakeContextCustomer {
        FakeContextCustomer(
            customer: FakeContextCustomer.customer(id: "cus_1"),
            methods: [
                FakeContextCustomer.card("pm_visa", brand: "visa", last4: "4242"),
                FakeContextCustomer.card("pm_mc", brand: "mastercard", last4: "4444"),
            ])
    }

    // MARK: Loading (§4.3)

    @Test func loadingClearsTheCacheThenRetrievesTheCustomerThenListsItsCards() async throws {
        let customer = FakeContextCustomer(
            customer: FakeContextCustomer.customer(id: "cus_1", shipping: Self.berlinJSON),
            methods: [
                FakeContextCustomer.card("pm_visa", brand: "visa", last4: "4242"),
                FakeContextCustomer.method("pm_sepa", type: "sepa_debit"),
                FakeContextCustomer.card("pm_mc", brand: "mastercard", last4: "4444"),
                FakeContextCustomer.card("pm_amex", brand: "amex", last4: "0005"),
            ])
        let world = try await World(customer: customer)
        let view = try await world.create()

        #expect(customer.ops == [.clearCache, .retrieveCustomer, .listPaymentMethods, .lastSelected])
        #expect(customer.calls.allSatisfy { $0.session == "cs_1" && $0.owner == 1000 })
        #expect(customer.calls(.lastSelected).map(\.argument) == ["cus_1"])
        // Cards only, sorted by label.
        #expect(view.options.map(\.label) == ["American Express 0005", "Mastercard 4444", "Visa 4242"])
        #expect(view.options.map(\.id) == ["pm_amex", "pm_mc", "pm_visa"])
        #expect(view.options.allSatisfy { $0.type == "card" })
        #expect(view.options.first?.paymentMethod["id"] == "pm_amex")
        // Nothing to select: no default, nothing remembered.
        #expect(view.selected == nil)
        #expect(!view.isReadyForPayment)
        #expect(view.loadError == nil)
        // The customer's shipping address is copied and needs verification.
        #expect(view.shippingAddress == Self.berlin)
        #expect(view.shippingNeedsVerification)
        #expect(try await world.types(view.id) == ["paymentContext.created", "paymentContext.didChange"])
        #expect(try await world.contexts.get(id: view.id, for: Caller(uid: 1000)) == view)
    }

    @Test func aPrefilledAddressIsKeptAndTheCustomersIsNotCopied() async throws {
        let customer = FakeContextCustomer(customer: FakeContextCustomer.customer(shipping: Self.berlinJSON))
        let world = try await World(customer: customer)
        let prefilled = try await world.create(.init(session: "cs_1", prefilledShippingAddress: Self.home))
        #expect(prefilled.shippingAddress == Self.home)
        #expect(prefilled.shippingNeedsVerification)

        customer.setCustomer(FakeContextCustomer.customer())
        let none = try await world.create()
        #expect(none.shippingAddress == nil)
        #expect(!none.shippingNeedsVerification)
    }

    @Test func theDefaultPaymentMethodIsSelectedWithoutAskingForTheLastSelected() async throws {
        let customer = Self.cards()
        customer.remember("pm_mc")
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        #expect(view.selected == "pm_visa")
        #expect(view.isReadyForPayment)
        #expect(customer.ops == [.clearCache, .retrieveCustomer, .listPaymentMethods])
    }

    @Test func withoutADefaultTheCustomersLastSelectedIsSelected() async throws {
        let customer = Self.cards()
        customer.remember("pm_mc")
        let world = try await World(customer: customer)
        #expect(try await world.create().selected == "pm_mc")

        // A default or remembered id that is not one of the card options selects nothing.
        customer.remember("pm_gone")
        #expect(try await world.create().selected == nil)
        #expect(
            try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_gone")).selected == nil
        )
    }

    @Test func aFailedLoadIsDidFailToLoadAndRequestPaymentFinishesWithItsError() async throws {
        let customer = Self.cards()
        customer.fail(.retrieveCustomer, with: StpdErrors.backendError("the backend is down"))
        let world = try await World(customer: customer)
        let failed = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        #expect(try await world.types(failed.id) == ["paymentContext.created", "paymentContext.didFailToLoad"])
        #expect(customer.ops == [.clearCache, .retrieveCustomer])
        let loadError = try #require(failed.loadError)
        #expect(loadError.describedCode == StpdErrors.backendError.code)
        #expect(!failed.isReadyForPayment)

        let since = try await world.mark()
        let finished = try await world.requestPayment(failed.id)
        #expect(finished.lastResult?.status == .error)
        #expect(finished.lastResult?.error == loadError)
        #expect(finished.requestState == .none)
        #expect(finished.pending == nil)
        #expect(try await world.types(failed.id, since: since) == ["paymentContext.didFinish"])

        // retryLoading starts over and succeeds.
        let retrying = try await world.contexts.retryLoading(id: failed.id, for: Caller(uid: 1000))
        #expect(retrying.loading)
        #expect(retrying.loadError == nil)
        let loaded = try await world.until(failed.id, since: since, types: ["paymentContext.didChange"]) { !$0.loading }
        #expect(loaded.loadError == nil)
        #expect(loaded.selected == "pm_visa")
        #expect(loaded.isReadyForPayment)
        #expect(customer.ops == [.clearCache, .retrieveCustomer, .clearCache, .retrieveCustomer, .listPaymentMethods])

        // Now requestPayment goes on to the app.
        let asked = try await world.requestPayment(failed.id)
        #expect(asked.pending?.kind == .didCreatePaymentResult)
    }

    @Test func aListFailureFailsTheLoadToo() async throws {
        let customer = Self.cards()
        customer.fail(.listPaymentMethods, with: StpdErrors.appRequestTimedOut("listPaymentMethods"))
        let world = try await World(customer: customer)
        let failed = try await world.create()
        #expect(failed.loadError?.describedCode == StpdErrors.appRequestTimedOut.code)
        #expect(failed.options.isEmpty)
    }

    @Test func requestPaymentWhileLoadingWaitsAndGoesOnWhenLoaded() async throws {
        let customer = Self.cards()
        let gate = customer.hold(.listPaymentMethods)
        let world = try await World(customer: customer)
        let created = try await world.contexts.create(
            for: Caller(uid: 1000), PaymentContextTerms(session: "cs_1", defaultPaymentMethod: "pm_mc"))
        await Self.within("listPaymentMethods") { [c = customer] in await c.called(.listPaymentMethods) }

        let waiting = try await world.requestPayment(created.id)
        #expect(waiting.loading)
        #expect(waiting.requestState == .none)
        #expect(waiting.needs == nil)
        #expect(waiting.pending == nil)
        // Asked twice while loading: still one request once loaded.
        _ = try await world.requestPayment(created.id)

        let since = try await world.mark()
        gate.open()
        let asked = try await world.until(created.id, since: since, types: ["paymentContext.pendingAction"])
        #expect(!asked.loading)
        #expect(asked.requestState == .requestingPayment)
        #expect(asked.pending?.kind == .didCreatePaymentResult)
        #expect(asked.pending?.payload["paymentMethod"]?["id"] == "pm_mc")
        #expect(
            try await world.types(created.id, since: since) == [
                "paymentContext.didChange", "paymentContext.pendingAction",
            ])
    }

    @Test func requestPaymentWhileALoadThatFailsRunsFinishesWithTheLoadError() async throws {
        let customer = Self.cards()
        let gate = customer.hold(.retrieveCustomer)
        customer.fail(.retrieveCustomer, with: StpdErrors.backendError("no customer"))
        let world = try await World(customer: customer)
        let created = try await world.contexts.create(
            for: Caller(uid: 1000), PaymentContextTerms(session: "cs_1"))
        await Self.within("retrieveCustomer") { [c = customer] in await c.called(.retrieveCustomer) }
        #expect(try await world.requestPayment(created.id).loading)

        let since = try await world.mark()
        gate.open()
        let finished = try await world.until(created.id, since: since, types: ["paymentContext.didFinish"])
        #expect(finished.lastResult?.status == .error)
        #expect(finished.lastResult?.error?.describedCode == StpdErrors.backendError.code)
        #expect(finished.lastResult?.error == finished.loadError)
        #expect(finished.requestState == .none)
    }

    // MARK: Selection (§4.6 payment options screen)

    @Test func selectingAnUnknownPaymentMethodIsNotFound() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create()
        let error = await domainError {
            try await world.contexts.select(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_nope")
        }
        #expect(error?.name == "notInObject")
        #expect(world.customer.calls(.select).isEmpty)
        // Another user's context is not found either.
        let other = await domainError {
            try await world.contexts.select(id: view.id, for: Caller(uid: 2000), paymentMethod: "pm_visa")
        }
        #expect(other?.name == "notFound")
    }

    @Test func selectingRemembersTheChoiceForTheCustomersNextContext() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let first = try await world.create()
        let selected = try await world.contexts.select(id: first.id, for: Caller(uid: 1000), paymentMethod: "pm_visa")
        #expect(selected.selected == "pm_visa")
        #expect(selected.isReadyForPayment)
        await Self.within("select") { [c = customer] in await c.called(.select) }
        #expect(customer.calls(.select).map(\.argument) == ["pm_visa"])
        #expect(customer.lastSelectedMemory(for: "cus_1") == "pm_visa")

        #expect(try await world.create().selected == "pm_visa")
    }

    /// STPPaymentOptionsViewController saves the choice with no completion: a save that fails
    /// neither fails the selection nor undoes it.
    @Test func aFailedSaveOfTheChoiceStillSelects() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let view = try await world.create()
        customer.fail(.select, with: DomainError.invalidInput(input: "x", detail: "the store is down"), times: 2)
        let selected = try await world.contexts.select(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_visa")
        #expect(selected.selected == "pm_visa")
        let added = try await world.contexts.addCard(
            id: view.id, for: Caller(uid: 1000),
            card: CardInput(number: "4000 0025 0000 3155", expMonth: 12, expYear: 2031, zip: "10115"))
        #expect(added.selected != "pm_visa" && added.selected != nil)
        await Self.within("select") { [c = customer] in await c.called(.select, times: 2) }
        #expect(customer.lastSelectedMemory(for: "cus_1") == nil)
    }

    @Test func addCardAttachesSelectsAndRemembersTheNewCard() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_mc"))
        let added = try await world.contexts.addCard(
            id: view.id, for: Caller(uid: 1000),
            card: CardInput(number: "4000 0025 0000 3155", expMonth: 12, expYear: 2031, zip: "10115"))
        let id = try #require(added.selected)
        #expect(id != "pm_mc")
        #expect(added.options.map(\.label) == ["Mastercard 4444", "Visa 3155", "Visa 4242"])
        #expect(added.options.map(\.id).contains(id))
        await Self.within("select") { [c = customer] in await c.called(.select) }
        #expect(Array(customer.ops.dropFirst(3)) == [.attach, .select])
        #expect(customer.calls(.attach).map(\.argument) == [id])
        #expect(customer.calls(.select).map(\.argument) == [id])
        #expect(customer.lastSelectedMemory() == id)
    }

    /// STPAddCardViewController submits only when the billing address holds the configuration's
    /// requiredBillingAddressFields (default postalCode; a postal code is required when the country is unknown).
    /// The refusal names the card's field (the daemon names it `card.<field>` in params).
    @Test(
        arguments: [
            ("postalCode", CardInput(number: "4242424242424242", expMonth: 1, expYear: 2030), "zip"),
            (
                "postalCode",
                CardInput(number: "4242424242424242", expMonth: 1, expYear: 2030, zip: "123", country: "US"), "zip"
            ),
            ("name", CardInput(number: "4242424242424242", expMonth: 1, expYear: 2030, zip: "10115"), "name"),
            (
                "full", CardInput(number: "4242424242424242", expMonth: 1, expYear: 2030, name: "Ada", zip: "10115"),
                "addressLine1"
            ),
            (
                "full",
                CardInput(
                    number: "4242424242424242", expMonth: 1, expYear: 2030, addressLine1: "1 Main St", city: "Austin",
                    zip: "78701", country: "US"), "state"
            ),
        ] as [(String?, CardInput, String)])
    func addCardRequiresTheBillingFieldsStripeIOS23sFormDemands(level: String?, card: CardInput, field: String)
        async throws
    {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let view = try await world.create(
            .init(session: "cs_1", configuration: .init(requiredBillingAddressFields: level)))
        await #expect {
            try await world.contexts.addCard(id: view.id, for: Caller(uid: 1000), card: card)
        } throws: { error in
            guard case .invalidInput(let input, _)? = error as? DomainError else { return false }
            return input == field
        }
        #expect(customer.calls(.attach).isEmpty)
        // Without requirements, or in a country without postal codes, the same card goes through.
        let none = try await world.create(
            .init(session: "cs_1", configuration: .init(requiredBillingAddressFields: "none")))
        _ = try await world.contexts.addCard(id: none.id, for: Caller(uid: 1000), card: card)
        var irish = CardInput(number: "4242424242424242", expMonth: 1, expYear: 2030, country: "IE")
        irish.name = "Ada"
        _ = try await world.contexts.addCard(
            id: (try await world.create(.init(session: "cs_1"))).id, for: Caller(uid: 1000), card: irish)
    }

    /// Nor does it submit a card STPCardValidator refuses (an expiry in the past, here): nothing
    /// is created or attached.
    @Test func addCardRefusesACardTheNewestSTPCardValidatorRefuses() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1"))
        let expired = CardInput(number: "5555555555554444", expMonth: 10, expYear: 2023, zip: "10115")  // t0: Nov 2023
        await #expect(throws: CardRefused(field: .expYear, state: .invalid, brand: .mastercard)) {
            try await world.contexts.addCard(id: view.id, for: Caller(uid: 1000), card: expired)
        }
        #expect(customer.calls(.attach).isEmpty)
        #expect(try await world.contexts.get(id: view.id, for: Caller(uid: 1000)).options.count == 2)
    }

    @Test func addCardLooksUpUnionPaysVariableLengths() async throws {
        let customer = Self.cards()
        let service = CardMetadataLookupTests.Service()
        let world = try await World(customer: customer, cardMetadata: CardMetadataLookup(source: service))
        let view = try await world.create(.init(session: "cs_1"))
        let card = CardInput(number: CardMetadataLookupTests.card19, expMonth: 10, expYear: 2030, zip: "10115")
        _ = try await world.contexts.addCard(id: view.id, for: Caller(uid: 1000), card: card)
        #expect(service.prefixes == ["620550"])
        #expect(customer.calls(.attach).count == 1)
    }

    @Test func aFailedAttachLeavesTheSelectionAlone() async throws {
        let customer = Self.cards()
        customer.fail(.attach, with: StpdErrors.backendError("attach refused"))
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_mc"))
        let refused = await thrownError {
            try await world.contexts.addCard(
                id: view.id, for: Caller(uid: 1000),
                card: CardInput(number: "4242424242424242", expMonth: 1, expYear: 2030, zip: "10115"))
        }
        #expect((refused as? RPCError)?.code == StpdErrors.backendError.code, "the adapter's error as it threw it")
        let after = try await world.contexts.get(id: view.id, for: Caller(uid: 1000))
        #expect(after.selected == "pm_mc")
        #expect(after.options.count == 2)
        #expect(customer.calls(.select).isEmpty)
    }

    @Test func removingTheSelectedOptionSelectsTheFirstRemaining() async throws {
        let customer = FakeContextCustomer(methods: [
            FakeContextCustomer.card("pm_visa", brand: "visa", last4: "4242"),
            FakeContextCustomer.card("pm_mc", brand: "mastercard", last4: "4444"),
            FakeContextCustomer.card("pm_amex", brand: "amex", last4: "0005"),
        ])
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_mc"))
        // Not selected: the selection stays.
        let removedVisa = try await world.contexts.remove(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_visa")
        #expect(removedVisa.selected == "pm_mc")
        #expect(removedVisa.options.map(\.id) == ["pm_amex", "pm_mc"])
        // Selected: the first remaining one is selected.
        let removedMC = try await world.contexts.remove(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_mc")
        #expect(removedMC.options.map(\.id) == ["pm_amex"])
        #expect(removedMC.selected == "pm_amex")
        let removedLast = try await world.contexts.remove(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_amex")
        #expect(removedLast.options.isEmpty)
        #expect(removedLast.selected == nil)
        #expect(customer.calls(.detach).map(\.argument) == ["pm_visa", "pm_mc", "pm_amex"])

        let unknown = await domainError {
            try await world.contexts.remove(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_visa")
        }
        #expect(unknown?.name == "notInObject")
    }

    @Test func removingIsRefusedWhenTheConfigurationForbidsDeleting() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", configuration: .init(canDeletePaymentOptions: false)))
        let error = await domainError {
            try await world.contexts.remove(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_visa")
        }
        #expect(error?.name == "invalidState")
        #expect(customer.calls(.detach).isEmpty)
        #expect(try await world.contexts.get(id: view.id, for: Caller(uid: 1000)).options.count == 2)
    }

    // MARK: Shipping (§4.2, §4.6)

    @Test func withoutValidationAnAddressIsAcceptedAndSavedToTheCustomer() async throws {
        let customer = FakeContextCustomer(customer: FakeContextCustomer.customer(shipping: Self.berlinJSON))
        let world = try await World(customer: customer)
        let view = try await world.create()
        #expect(view.shippingNeedsVerification)
        let accepted = try await world.contexts.setShippingAddress(
            id: view.id, for: Caller(uid: 1000), address: Self.home)
        #expect(accepted.shippingAddress == Self.home)
        #expect(!accepted.shippingNeedsVerification)
        #expect(accepted.pending == nil)
        #expect(accepted.shippingMethods == nil)
        #expect(accepted.selectedShippingMethod == nil)

        await Self.within("updateShipping") { [c = customer] in await c.called(.updateShipping) }
        let saved = try #require(customer.shippingUpdates.first)
        #expect(saved.name == "Ada Lovelace")
        #expect(saved.phone == "415-555-0100")
        #expect(saved.email == "ada@example.com")
        #expect(saved.line1 == "1 Market St")
        #expect(saved.line2 == "Suite 5")
        #expect(saved.city == "San Francisco")
        #expect(saved.state == "CA")
        #expect(saved.postalCode == "94107")
        #expect(saved.country == "US")
        #expect(customer.calls(.updateShipping).first?.owner == 1000)
    }

    @Test func aFailedSaveIsAnEventNotTheCallersError() async throws {
        let customer = FakeContextCustomer()
        customer.fail(.updateShipping, with: StpdErrors.backendError("cannot save"))
        let world = try await World(customer: customer)
        let view = try await world.create()
        let since = try await world.mark()
        let accepted = try await world.contexts.setShippingAddress(
            id: view.id, for: Caller(uid: 1000), address: Self.home)
        #expect(accepted.shippingAddress == Self.home)
        let failed = try await world.until(view.id, since: since, types: ["paymentContext.shippingSaveFailed"])
        #expect(failed.lastShippingSaveError?.describedCode == StpdErrors.backendError.code)
        #expect(failed.shippingAddress == Self.home)
    }

    @Test func withValidationTheAppIsAskedAndAnInvalidAnswerKeepsTheOldAddress() async throws {
        let customer = FakeContextCustomer()
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", validatesShipping: true))
        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        let pending = try #require(asked.pending)
        #expect(pending.kind == .didUpdateShippingAddress)
        #expect(pending.id.hasPrefix("pact_"))
        #expect(
            try JSONCoding.typed(ShippingAddressParams.self, from: pending.payload["address"] ?? .null) == Self.home)
        #expect(asked.shippingAddress == nil)

        // One address at a time.
        let busy = await domainError {
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.berlin)
        }
        #expect(busy?.name == "invalidState")

        let since = try await world.mark()
        let refused = try await world.answer(
            pending.id, .invalid, error: .init(message: "We do not ship there", code: "no_ship"))
        #expect(refused.pending == nil)
        #expect(refused.shippingAddress == nil)
        #expect(refused.shippingError?.domainErrorName == "paymentFailed")
        #expect(refused.shippingError?.domainData["message"] == "We do not ship there")
        #expect(refused.shippingError?.domainData["code"] == "no_ship")
        #expect(try await world.types(view.id, since: since) == ["paymentContext.shippingInvalid"])

        // Without the app's error, the SDK's default title.
        let again = try #require(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending)
        let plain = try await world.answer(again.id, .invalid)
        #expect(plain.shippingError == .domain(.paymentFailed(detail: "Invalid Shipping Address", data: [:])))
        #expect(customer.calls(.updateShipping).isEmpty)
    }

    @Test(arguments: [("exp", "exp"), (nil, "std"), ("nope", "std")] as [(String?, String)])
    func aValidAnswerSelectsThePreferredMethodIfListedElseTheFirst(preferred: String?, expected: String) async throws {
        let customer = FakeContextCustomer()
        let world = try await World(customer: customer)
        let view = try await world.create(.init(session: "cs_1", validatesShipping: true))
        let pending = try #require(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending)
        let accepted = try await world.answer(pending.id, .valid, methods: Self.methods, selected: preferred)
        #expect(accepted.pending == nil)
        #expect(accepted.shippingError == nil)
        #expect(accepted.shippingAddress == Self.home)
        #expect(!accepted.shippingNeedsVerification)
        #expect(accepted.shippingMethods == Self.methods)
        #expect(accepted.selectedShippingMethod == expected)
        await Self.within("updateShipping") { [c = customer] in await c.called(.updateShipping) }
        #expect(customer.shippingUpdates.map(\.line1) == ["1 Market St"])
    }

    /// A difference: a later list keeps a selection still in it (19.x's rule); 21.0 to 23.x invert
    /// the test and move a listed selection to the first. One no longer listed moves to the first,
    /// an empty list clears it, and no list at all is stored as none (23.x: `shippingMethods = nil`).
    @Test func aSelectionStillInALaterListStaysSelected() async throws {
        let world = try await World()
        let view = try await world.create(.init(session: "cs_1", validatesShipping: true))
        func answerNext(_ methods: [ShippingMethodOffer], selected: String? = nil) async throws -> PaymentContextRecord
        {
            let asked = try await world.contexts.setShippingAddress(
                id: view.id, for: Caller(uid: 1000), address: Self.home)
            return try await world.answer(asked.pending?.id, .valid, methods: methods, selected: selected)
        }
        let overnight = ShippingMethodOffer(identifier: "ovn", label: "Overnight", amount: 2500)
        #expect(try await answerNext(Self.methods, selected: "exp").selectedShippingMethod == "exp")
        // Still listed: kept (21.0 to 23.x would move to the first).
        #expect(try await answerNext([overnight, Self.methods[1]]).selectedShippingMethod == "exp")
        // No longer listed: the first.
        #expect(try await answerNext([overnight, Self.methods[0]]).selectedShippingMethod == "ovn")
        // The app's preference wins when listed.
        #expect(try await answerNext([overnight, Self.methods[0]], selected: "std").selectedShippingMethod == "std")
        // Empty: none.
        let empty = try await answerNext([])
        #expect(empty.selectedShippingMethod == nil)
        #expect(empty.shippingMethods == [])
        // None given: none stored, and the address finishes with no method.
        _ = try await answerNext(Self.methods, selected: "exp")
        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        let none = try await world.answer(asked.pending?.id, .valid)
        #expect(none.shippingMethods == nil)
        #expect(none.selectedShippingMethod == nil)
    }

    @Test func theTotalIncludesTheSelectedShippingMethodLabelledWithTheCompanyName() async throws {
        let world = try await World(companyName: "Shop")
        let view = try await world.create(
            .init(session: "cs_1", amount: 1000, currency: "usd", validatesShipping: true))
        #expect(view.currency == "USD")
        #expect(view.configuration.companyName == "Shop")
        #expect(view.paymentAmount == 1000)
        #expect(view.paymentSummaryItems == [.init(label: "Shop", amount: 1000, decimal: "10.00")])

        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        let shipped = try await world.answer(asked.pending?.id, .valid, methods: Self.methods, selected: "exp")
        #expect(shipped.amount == 1000)
        #expect(shipped.paymentAmount == 2500)
        #expect(
            shipped.paymentSummaryItems == [
                .init(label: "Express", amount: 1500, decimal: "15.00"),
                .init(label: "Shop", amount: 2500, decimal: "25.00"),
            ])

        let standard = try await world.contexts.selectShippingMethod(
            id: view.id, for: Caller(uid: 1000), shippingMethod: "std")
        #expect(standard.paymentAmount == 1500)
        #expect(
            standard.paymentSummaryItems == [
                .init(label: "Standard", amount: 500, decimal: "5.00"),
                .init(label: "Shop", amount: 1500, decimal: "15.00"),
            ])
        let unknown = await domainError {
            try await world.contexts.selectShippingMethod(
                id: view.id, for: Caller(uid: 1000), shippingMethod: "teleport")
        }
        #expect(unknown?.name == "notInObject")

        // The configuration's company name wins over the daemon's.
        let own = try await world.create(.init(session: "cs_1", amount: 1, configuration: .init(companyName: "Acme")))
        #expect(own.paymentSummaryItems == [.init(label: "Acme", amount: 1, decimal: "0.01")])
        #expect(
            try await World(companyName: nil).create().paymentSummaryItems == [
                .init(label: "", amount: 0, decimal: "0.00")
            ])
    }

    /// STPPaymentContext's settable paymentSummaryItems: the last is the total; a selected shipping
    /// method goes before it and adds to it; setting paymentAmount replaces the items.
    @Test func theAppsOwnPaymentSummaryItemsWithTheShippingMethodBeforeTheTotal() async throws {
        let world = try await World(companyName: "Shop")
        let view = try await world.create(
            .init(session: "cs_1", amount: 1000, currency: "usd", validatesShipping: true))
        let own = try await world.contexts.setAmount(
            id: view.id, for: Caller(uid: 1000),
            total: .summaryItems([
                .init(label: "Book", amount: 1800), .init(label: "Tax", amount: 200),
                .init(label: "Acme Books", amount: 2000),
            ]), currency: nil, country: nil)
        #expect(own.paymentAmount == 2000)
        #expect(
            own.paymentSummaryItems == [
                .init(label: "Book", amount: 1800, decimal: "18.00"), .init(label: "Tax", amount: 200, decimal: "2.00"),
                .init(label: "Acme Books", amount: 2000, decimal: "20.00"),
            ])
        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        let shipped = try await world.answer(asked.pending?.id, .valid, methods: Self.methods, selected: "std")
        #expect(shipped.paymentAmount == 2500)
        #expect(
            shipped.paymentSummaryItems.map(\.label) == ["Book", "Tax", "Standard", "Acme Books"])
        #expect(shipped.paymentSummaryItems.last?.amount == 2500)
        let reset = try await world.contexts.setAmount(
            id: view.id, for: Caller(uid: 1000), total: .amount(700), currency: nil, country: nil)
        #expect(reset.paymentSummaryItems.map(\.label) == ["Standard", "Shop"])
        #expect(reset.paymentAmount == 1200)
        // No items at all, as 23.x's amount model takes them: none shown, the shipping method paid alone.
        let none = try await world.contexts.setAmount(
            id: view.id, for: Caller(uid: 1000), total: .summaryItems([]), currency: nil, country: nil)
        #expect(none.paymentSummaryItems == [])
        #expect(none.paymentAmount == 500)
    }

    @Test func zeroDecimalCurrenciesAreNotDividedByAHundred() async throws {
        let world = try await World()
        let view = try await world.create()
        let yen = try await world.contexts.setAmount(
            id: view.id, for: Caller(uid: 1000), total: .amount(500), currency: "jpy", country: "jp")
        #expect(yen.currency == "JPY")
        #expect(yen.country == "JP")
        #expect(yen.paymentSummaryItems.last?.decimal == "500")
        let dollars = try await world.contexts.setAmount(
            id: view.id, for: Caller(uid: 1000), total: .amount(1099), currency: "USD", country: nil)
        #expect(dollars.paymentSummaryItems.last?.amount == 1099)
        #expect(dollars.paymentSummaryItems.last?.decimal == "10.99")
        #expect(dollars.country == "JP")
    }

    @Test(arguments: [
        ("JPY", 500, "500"), ("usd", 1099, "10.99"), ("USD", 5, "0.05"), ("EUR", 100, "1.00"), ("krw", 1000, "1000"),
        ("XOF", 7, "7"), ("vnd", 12345, "12345"), ("GBP", 0, "0.00"), ("CLP", 990, "990"),
    ])
    func minorUnitsAsDecimals(currency: String, amount: Int, decimal: String) {
        #expect(CurrencyAmounts.decimal(amount, currency: currency) == decimal)
    }

    @Test func deliveryAcceptsAddressesWithoutAskingTheApp() async throws {
        let customer = FakeContextCustomer()
        let world = try await World(customer: customer)
        let view = try await world.create(
            .init(session: "cs_1", configuration: .init(shippingType: "delivery"), validatesShipping: true))
        let since = try await world.mark()
        let accepted = try await world.contexts.setShippingAddress(
            id: view.id, for: Caller(uid: 1000), address: Self.home)
        #expect(accepted.pending == nil)
        #expect(accepted.shippingAddress == Self.home)
        #expect(!(try await world.types(view.id, since: since)).contains("paymentContext.pendingAction"))
        await Self.within("updateShipping") { [c = customer] in await c.called(.updateShipping) }
    }

    /// STPShippingAddressViewController: a delivery address, or an address the app does not validate,
    /// is `finish(address, shippingMethod: nil)`, which sets `selectedShippingMethod` to nil.
    @Test func anAddressTheAppIsNotAskedAboutFinishesWithNoShippingMethod() async throws {
        let world = try await World()
        let view = try await world.create(.init(session: "cs_1", amount: 1000, validatesShipping: true))
        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        let chosen = try await world.answer(asked.pending?.id, .valid, methods: Self.methods, selected: "exp")
        #expect(chosen.selectedShippingMethod == "exp")
        // The path setShippingAddress takes for delivery or a context whose app does not validate.
        let cleared = try await world.contexts.acceptShipping(
            view.id, for: Caller(uid: 1000), address: Self.berlin, answer: nil)
        #expect(cleared.shippingAddress == Self.berlin)
        #expect(cleared.selectedShippingMethod == nil)
        #expect(cleared.shippingMethods == Self.methods)
        #expect(cleared.paymentAmount == 1000)
        #expect(cleared.paymentSummaryItems.count == 1)

        for (type, validates) in [("delivery", true), ("shipping", false)] {
            let other = try await world.create(
                .init(session: "cs_1", configuration: .init(shippingType: type), validatesShipping: validates))
            let accepted = try await world.contexts.setShippingAddress(
                id: other.id, for: Caller(uid: 1000), address: Self.home)
            #expect(accepted.pending == nil)
            #expect(accepted.selectedShippingMethod == nil)
        }
    }

    // MARK: requestPayment (§4.4, §4.5)

    @Test func withNothingSelectedItNeedsAPaymentOptionAndSelectingGoesOnToTheApp() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create()
        let since = try await world.mark()
        let needs = try await world.requestPayment(view.id)
        #expect(needs.requestState == .requestingPayment)
        #expect(needs.needs == .paymentOption)
        #expect(needs.pending == nil)
        #expect(try await world.types(view.id, since: since) == ["paymentContext.needsInput"])

        let asked = try await world.contexts.select(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_mc")
        #expect(asked.needs == nil)
        #expect(asked.requestState == .requestingPayment)
        let pending = try #require(asked.pending)
        #expect(pending.kind == .didCreatePaymentResult)
        #expect(pending.payload["paymentMethod"]?["id"] == "pm_mc")
        #expect(pending.payload["paymentMethod"]?["card"]?["last4"] == "4444")
        #expect(try await world.types(view.id, since: since).last == "paymentContext.pendingAction")

        let done = try await world.answer(pending.id, .success)
        #expect(done.requestState == .none)
        #expect(done.pending == nil)
        #expect(done.lastResult == .init(status: .success, error: nil))
        #expect(try await world.types(view.id, since: since).last == "paymentContext.didFinish")
    }

    @Test func addingACardWhileAnOptionIsNeededGoesOnToTheApp() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create()
        #expect(try await world.requestPayment(view.id).needs == .paymentOption)
        let asked = try await world.contexts.addCard(
            id: view.id, for: Caller(uid: 1000),
            card: CardInput(number: "5555555555554444", expMonth: 3, expYear: 2032, zip: "10115")
        )
        #expect(asked.pending?.kind == .didCreatePaymentResult)
        #expect(asked.pending?.payload["paymentMethod"]?["id"]?.stringValue == asked.selected)
    }

    @Test(
        arguments: [
            (["postalAddress"], PaymentContextsTests.home, true),
            (["name", "emailAddress", "phoneNumber", "postalAddress"], PaymentContextsTests.home, true),
            (
                ["postalAddress"],
                ShippingAddressParams(
                    address: .init(line1: "1 Market St", city: "SF", postalCode: "94107", country: "US")), false
            ),
            (
                ["postalAddress"],
                ShippingAddressParams(
                    address: .init(line1: "1 Market St", city: "SF", state: "CA", postalCode: "9410", country: "US")),
                false
            ),
            (
                ["postalAddress"],
                ShippingAddressParams(
                    address: .init(
                        line1: "1 Market St", city: "SF", state: "CA", postalCode: "94107-1234", country: "US")), true
            ),
            (
                ["postalAddress"],
                ShippingAddressParams(
                    address: .init(line1: "1 Market St", city: "SF", state: "CA", postalCode: "94107")), false
            ),
            (
                ["postalAddress"],
                ShippingAddressParams(address: .init(city: "SF", state: "CA", postalCode: "94107", country: "US")),
                false
            ),
            (["postalAddress"], PaymentContextsTests.berlin, true),
            (
                ["postalAddress"],
                ShippingAddressParams(address: .init(line1: "Alexanderplatz 2", city: "Berlin", country: "DE")), false
            ),
            (
                ["postalAddress"],
                ShippingAddressParams(address: .init(line1: "1 O'Connell St", city: "Dublin", country: "IE")), true
            ),
            (["name"], ShippingAddressParams(name: "", address: .init()), false),
            (["name"], ShippingAddressParams(name: "Ada", address: .init()), true),
            (["emailAddress"], ShippingAddressParams(email: "ada@", address: .init()), false),
            (["emailAddress"], ShippingAddressParams(email: "ada@example.com", address: .init()), true),
            (["phoneNumber"], ShippingAddressParams(phone: "555-0100", address: .init(country: "US")), false),
            (["phoneNumber"], ShippingAddressParams(phone: "(415) 555-0100", address: .init(country: "US")), true),
            // PhoneNumber's patterns (ddfabb9): DE `### #######`, whatever else the text holds.
            (["phoneNumber"], ShippingAddressParams(phone: "+49 30 1", address: .init(country: "DE")), false),
            (["phoneNumber"], ShippingAddressParams(phone: "030 1234567", address: .init(country: "DE")), true),
            (["phoneNumber"], ShippingAddressParams(phone: "1", address: .init(country: "XX")), true),
            (
                ["postalAddress"], ShippingAddressParams(address: .init(line1: "1-1", city: "Tokyo", country: "JP")),
                true
            ),
            ([], ShippingAddressParams(address: .init()), true),
        ] as [([String], ShippingAddressParams, Bool)])
    func requiredShippingFields(fields: [String], address: ShippingAddressParams, satisfied: Bool) {
        #expect(address.contains(requiredFields: fields) == satisfied)
    }

    @Test func aMissingRequiredAddressIsAskedForAndSettingItGoesOn() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let view = try await world.create(
            .init(
                session: "cs_1", configuration: .init(requiredShippingAddressFields: ["postalAddress"]),
                defaultPaymentMethod: "pm_visa"))
        let needs = try await world.requestPayment(view.id)
        #expect(needs.needs == .shippingAddress)
        #expect(needs.requestState == .requestingPayment)
        #expect(needs.pending == nil)

        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        #expect(asked.needs == nil)
        #expect(asked.shippingAddress == Self.home)
        #expect(asked.pending?.kind == .didCreatePaymentResult)
        #expect(asked.pending?.payload["paymentMethod"]?["id"] == "pm_visa")
    }

    /// STPShippingAddressViewController does not submit until its `addressViewModel.isValid`
    /// (`STPAddress.containsRequiredShippingAddressFields`, 23.x): an incomplete address is refused,
    /// naming what is missing, and reaches neither the context, nor the app, nor the customer.
    @Test func anIncompleteShippingAddressIsRefusedNamingWhatIsMissing() async throws {
        let customer = Self.cards()
        let world = try await World(customer: customer)
        let required = ["name", "phoneNumber", "postalAddress"]
        let view = try await world.create(
            .init(
                session: "cs_1", configuration: .init(requiredShippingAddressFields: required),
                validatesShipping: true, defaultPaymentMethod: "pm_visa"))
        let incomplete = ShippingAddressParams(
            name: "Ada Lovelace", phone: "555-0100",
            address: .init(line1: "1 Market St", city: "SF", postalCode: "12345-", country: "US"))
        await #expect(
            throws: DomainError.shippingAddressIncomplete(
                fields: ["phoneNumber", "postalAddress"], members: ["phone", "address.state", "address.postalCode"])
        ) {
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: incomplete)
        }
        let after = try await world.contexts.get(id: view.id, for: Caller(uid: 1000))
        #expect(after.shippingAddress == nil && after.pending == nil)
        #expect(customer.calls(.updateShipping).isEmpty)
        // Japan has no postal codes; a German number needs its ten digits.
        let tokyo = ShippingAddressParams(
            name: "Ada", phone: "03-1234-5678", address: .init(line1: "1-1 Chiyoda", city: "Tokyo", country: "JP"))
        #expect(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: tokyo)
                .pending?.kind == .didUpdateShippingAddress)
    }

    @Test func aPrefilledAddressIsVerifiedUnlessTheConfigurationSaysNot() async throws {
        let world = try await World(customer: Self.cards())
        let verify = try await world.create(
            .init(
                session: "cs_1", configuration: .init(requiredShippingAddressFields: ["postalAddress"]),
                prefilledShippingAddress: Self.home, defaultPaymentMethod: "pm_visa"))
        #expect(try await world.requestPayment(verify.id).needs == .shippingAddress)

        let trusted = try await world.create(
            .init(
                session: "cs_1",
                configuration: .init(
                    requiredShippingAddressFields: ["postalAddress"], verifyPrefilledShippingAddress: false),
                prefilledShippingAddress: Self.home, defaultPaymentMethod: "pm_visa"))
        #expect(try await world.requestPayment(trusted.id).pending?.kind == .didCreatePaymentResult)

        // Without required fields nothing is asked, address or not.
        let none = try await world.create(
            .init(session: "cs_1", validatesShipping: true, defaultPaymentMethod: "pm_visa"))
        #expect(try await world.requestPayment(none.id).pending?.kind == .didCreatePaymentResult)
    }

    @Test func theCustomersSavedAddressNeedsVerificationToo() async throws {
        let customer = Self.cards()
        customer.setCustomer(FakeContextCustomer.customer(id: "cus_1", shipping: Self.berlinJSON))
        let world = try await World(customer: customer)
        let view = try await world.create(
            .init(
                session: "cs_1", configuration: .init(requiredShippingAddressFields: ["name", "postalAddress"]),
                defaultPaymentMethod: "pm_visa"))
        #expect(view.shippingAddress == Self.berlin)
        #expect(try await world.requestPayment(view.id).needs == .shippingAddress)
        let asked = try await world.contexts.setShippingAddress(
            id: view.id, for: Caller(uid: 1000), address: Self.berlin)
        #expect(asked.pending?.kind == .didCreatePaymentResult)
        #expect(!asked.shippingNeedsVerification)
    }

    @Test func aValidatingAppMustChooseAShippingMethodBeforePaying() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(
            .init(
                session: "cs_1",
                configuration: .init(
                    requiredShippingAddressFields: ["postalAddress"], verifyPrefilledShippingAddress: false),
                validatesShipping: true, prefilledShippingAddress: Self.home, defaultPaymentMethod: "pm_visa"))
        // Complete, not to verify, but no method: methodRequired.
        let needs = try await world.requestPayment(view.id)
        #expect(needs.needs == .shippingAddress)

        let asked = try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
        let validation = try #require(asked.pending)
        #expect(validation.kind == .didUpdateShippingAddress)
        #expect(asked.needs == .shippingAddress)

        let paying = try await world.answer(validation.id, .valid, methods: Self.methods)
        #expect(paying.selectedShippingMethod == "std")
        #expect(paying.needs == nil)
        #expect(paying.pending?.kind == .didCreatePaymentResult)
        #expect(paying.paymentAmount == 500)

        // A delivery needs no method.
        let delivery = try await world.create(
            .init(
                session: "cs_1",
                configuration: .init(
                    requiredShippingAddressFields: ["postalAddress"], shippingType: "delivery",
                    verifyPrefilledShippingAddress: false),
                validatesShipping: true, prefilledShippingAddress: Self.home, defaultPaymentMethod: "pm_visa"))
        #expect(try await world.requestPayment(delivery.id).pending?.kind == .didCreatePaymentResult)
    }

    @Test(arguments: [PendingActionAnswer.success, .error, .userCancellation])
    func theAppsAnswerIsDidFinish(status: PendingActionAnswer) async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        let since = try await world.mark()
        let done = try await world.answer(pending.id, status)
        #expect(done.lastResult?.status.rawValue == status.rawValue)
        if status == .error {
            #expect(done.lastResult?.error?.domainErrorName == "paymentFailed")
        } else {
            #expect(done.lastResult?.error == nil)
        }
        #expect(done.requestState == .none)
        #expect(done.pending == nil)
        #expect(try await world.types(view.id, since: since) == ["paymentContext.didFinish"])
        // And it can pay again.
        #expect(try await world.requestPayment(view.id).pending?.kind == .didCreatePaymentResult)
    }

    @Test func anErrorAnswerCarriesTheAppsMessageAndCode() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        let done = try await world.answer(
            pending.id, .error, error: .init(message: "Your card was declined", code: "card_declined"))
        let error = try #require(done.lastResult?.error)
        #expect(error.domainErrorName == "paymentFailed")
        #expect(error.domainData["message"] == "Your card was declined")
        #expect(error.domainData["code"] == "card_declined")
    }

    @Test func answeringTwiceOrAnUnknownActionIsPendingActionGone() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        _ = try await world.answer(pending.id, .success)
        for action in [pending.id, "pact_unknown"] {
            let error = await domainError { try await world.answer(action, .success) }
            if case .pendingActionGone(let gone, _) = error {
                #expect(gone == action)
            } else {
                Issue.record("\(String(describing: error)) is not pendingActionGone")
            }
        }
    }

    @Test func aStatusOfTheOtherKindIsAnInvalidParameter() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(
            .init(session: "cs_1", validatesShipping: true, defaultPaymentMethod: "pm_visa"))
        let shipping = try #require(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending)
        let wrongForShipping = await domainError { try await world.answer(shipping.id, .success) }
        #expect(wrongForShipping?.name == "invalidInput")
        _ = try await world.answer(shipping.id, .valid)

        let payment = try #require(try await world.requestPayment(view.id).pending)
        for status in [PendingActionAnswer.valid, .invalid] {
            let error = await domainError { try await world.answer(payment.id, status) }
            #expect(error?.name == "invalidInput")
        }
        // Still waiting.
        #expect(try await world.contexts.get(id: view.id, for: Caller(uid: 1000)).pending?.id == payment.id)
    }

    /// Another uid's action answers as one that does not exist.
    @Test func onlyTheOwnerOrRootMayAnswer() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        let error = await domainError { try await world.answer(pending.id, .success, by: 2000) }
        #expect(error?.name == "pendingActionGone")
        #expect(try await world.contexts.get(id: view.id, for: Caller(uid: 1000)).pending?.id == pending.id)
        #expect(try await world.answer(pending.id, .success, by: 0).lastResult?.status == .success)
    }

    @Test func aSecondRequestPaymentWhileRequestingIsIgnored() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let first = try await world.requestPayment(view.id)
        let pending = try #require(first.pending)
        let since = try await world.mark()
        let second = try await world.requestPayment(view.id)
        #expect(second.pending?.id == pending.id)
        #expect(second == first)
        #expect(try await world.types(view.id, since: since).isEmpty)

        // Also while needing input.
        let other = try await world.create()
        _ = try await world.requestPayment(other.id)
        let mark = try await world.mark()
        #expect(try await world.requestPayment(other.id).needs == .paymentOption)
        #expect(try await world.types(other.id, since: mark).isEmpty)
    }

    /// The SDK ignores requestPayment while its shipping screen shows (state != none); here that
    /// screen is an address the app is validating.
    @Test func requestPaymentWhileTheAppValidatesAnAddressIsIgnored() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(
            .init(session: "cs_1", validatesShipping: true, defaultPaymentMethod: "pm_visa"))
        let validation = try #require(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending)
        let since = try await world.mark()
        let ignored = try await world.requestPayment(view.id)
        #expect(ignored.pending == validation)
        #expect(ignored.requestState == .none)
        #expect(try await world.types(view.id, since: since).isEmpty)

        let accepted = try await world.answer(validation.id, .valid, methods: Self.methods)
        #expect(accepted.selectedShippingMethod == "std")
        #expect(accepted.pending == nil)
        let paying = try await world.requestPayment(view.id)
        #expect(paying.pending?.kind == .didCreatePaymentResult)
        _ = try await world.answer(paying.pending?.id, .success)
        #expect(await world.jobs.idle())
    }

    @Test func cancellingWhileInputIsNeededIsUserCancellation() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create()
        // Nothing to cancel yet.
        let idle = await domainError { try await world.contexts.cancel(id: view.id, for: Caller(uid: 1000)) }
        #expect(idle?.name == "invalidState")

        #expect(try await world.requestPayment(view.id).needs == .paymentOption)
        let since = try await world.mark()
        let cancelled = try await world.contexts.cancel(id: view.id, for: Caller(uid: 1000))
        #expect(cancelled.lastResult == .init(status: .userCancellation, error: nil))
        #expect(cancelled.requestState == .none)
        #expect(cancelled.needs == nil)
        #expect(try await world.types(view.id, since: since) == ["paymentContext.didFinish"])

        // Waiting for the app (no input needed): not the customer's to cancel.
        _ = try await world.contexts.select(id: view.id, for: Caller(uid: 1000), paymentMethod: "pm_visa")
        #expect(try await world.requestPayment(view.id).pending != nil)
        let busy = await domainError { try await world.contexts.cancel(id: view.id, for: Caller(uid: 1000)) }
        #expect(busy?.name == "invalidState")
    }

    @Test func cancellingWhileTheAppValidatesAnAddressDropsItsDeadline() async throws {
        let world = try await World(customer: Self.cards(), timeout: 30)
        let view = try await world.create(
            .init(
                session: "cs_1", configuration: .init(requiredShippingAddressFields: ["postalAddress"]),
                validatesShipping: true,
                defaultPaymentMethod: "pm_visa"))
        #expect(try await world.requestPayment(view.id).needs == .shippingAddress)
        let pending = try #require(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending)
        await Self.within("a deadline timer") { [clock = world.clock] in await clock.sleepersArrived(1) }

        let cancelled = try await world.contexts.cancel(id: view.id, for: Caller(uid: 1000))
        #expect(cancelled.lastResult?.status == .userCancellation)
        #expect(cancelled.pending == nil)
        // The deadline's timer ends with it (else it holds off the daemon's idle exit until the deadline).
        #expect(await world.jobs.idle())
        let gone = await domainError { try await world.answer(pending.id, .valid) }
        #expect(gone?.name == "pendingActionGone")
    }

    @Test func closingDropsThePendingAction() async throws {
        let world = try await World(customer: Self.cards())
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        let closed = try await world.contexts.close(id: view.id, for: Caller(uid: 1000))
        #expect(closed.status == .closed)
        #expect(closed.pending == nil)
        #expect(await world.jobs.idle())
        let gone = await domainError { try await world.answer(pending.id, .success) }
        #expect(gone?.name == "pendingActionGone")
        let shut = await domainError { try await world.requestPayment(view.id) }
        #expect(shut?.name == "invalidState")
        #expect(try await world.contexts.close(id: view.id, for: Caller(uid: 1000)).status == .closed)
    }

    // MARK: Deadlines

    @Test func anUnansweredPaymentResultFinishesWithATimeoutError() async throws {
        let world = try await World(customer: Self.cards(), timeout: 60)
        let view = try await world.create(
            .init(session: "cs_1", defaultPaymentMethod: "pm_visa", pendingActionTimeout: 30))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        #expect(pending.deadline == t0.addingTimeInterval(30))
        await Self.within("a deadline timer") { [clock = world.clock] in await clock.sleepersArrived(1) }

        let since = try await world.mark()
        world.clock.advance(by: .seconds(29))
        #expect(try await world.contexts.get(id: view.id, for: Caller(uid: 1000)).pending?.id == pending.id)
        world.clock.advance(by: .seconds(1))
        let finished = try await world.until(view.id, since: since, types: ["paymentContext.didFinish"])
        let error = try #require(finished.lastResult?.error)
        #expect(finished.lastResult?.status == .error)
        if case .domain(.pendingActionTimedOut(let action, let kind, _)) = error {
            #expect(action == pending.id)
            #expect(kind == "didCreatePaymentResult")
        } else {
            Issue.record("\(error) is not pendingActionTimedOut")
        }
        #expect(finished.pending == nil)
        #expect(finished.requestState == .none)
        #expect(try await world.types(view.id, since: since) == ["paymentContext.didFinish"])

        let late = await domainError { try await world.answer(pending.id, .success) }
        #expect(late?.name == "pendingActionGone")
    }

    @Test func anUnansweredAddressValidationIsShippingInvalidWithATimeoutError() async throws {
        let world = try await World(timeout: 45)
        let view = try await world.create(.init(session: "cs_1", validatesShipping: true))
        let pending = try #require(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending)
        #expect(pending.deadline == t0.addingTimeInterval(45))
        await Self.within("a deadline timer") { [clock = world.clock] in await clock.sleepersArrived(1) }
        let since = try await world.mark()
        world.clock.advance(by: .seconds(45))
        let invalid = try await world.until(view.id, since: since, types: ["paymentContext.shippingInvalid"])
        if case .domain(.pendingActionTimedOut(_, let kind, _)) = invalid.shippingError {
            #expect(kind == "didUpdateShippingAddress")
        } else {
            Issue.record("\(String(describing: invalid.shippingError)) is not pendingActionTimedOut")
        }
        #expect(invalid.pending == nil)
        #expect(invalid.shippingAddress == nil)
        // The customer can submit again.
        #expect(
            try await world.contexts.setShippingAddress(id: view.id, for: Caller(uid: 1000), address: Self.home)
                .pending
                != nil)
    }

    @Test func anAnsweredActionsDeadlineNoLongerFires() async throws {
        let world = try await World(customer: Self.cards(), timeout: 30)
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await world.requestPayment(view.id).pending)
        await Self.within("a deadline timer") { [clock = world.clock] in await clock.sleepersArrived(1) }
        _ = try await world.answer(pending.id, .userCancellation)
        #expect(await world.jobs.idle())
        let since = try await world.mark()
        world.clock.advance(by: .seconds(60))
        #expect(try await world.types(view.id, since: since).isEmpty)
        #expect(
            try await world.contexts.get(id: view.id, for: Caller(uid: 1000)).lastResult?.status == .userCancellation)
    }

    @Test func aPendingActionAndItsDeadlineSurviveARestartAndCanBeAnswered() async throws {
        let store = InMemoryStateStore()
        let clock = ManualClock()
        let customer = Self.cards()
        let before = try await World(customer: customer, store: store, clock: clock, timeout: 60)
        let view = try await before.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await before.requestPayment(view.id).pending)
        await Self.within("a deadline timer") { await clock.sleepersArrived(1) }
        await before.shutdown()
        #expect(clock.sleeperCount == 0)
        clock.advance(by: .seconds(30))

        let after = try await World(customer: customer, store: store, clock: clock, timeout: 60)
        try await after.resume()
        let restored = try await after.contexts.get(id: view.id, for: Caller(uid: 1000))
        #expect(restored.pending == pending)
        #expect(restored.requestState == .requestingPayment)
        #expect(restored.selected == "pm_visa")
        #expect(!restored.loading)
        // Loading is not redone: it had finished.
        #expect(customer.calls(.clearCache).count == 1)
        await Self.within("a deadline timer") { await clock.sleepersArrived(1) }

        let since = try await after.mark()
        let done = try await after.answer(pending.id, .success)
        #expect(done.lastResult?.status == .success)
        #expect(try await after.types(view.id, since: since) == ["paymentContext.didFinish"])
        #expect(await after.jobs.idle())
    }

    @Test func aRestoredDeadlineFiresWhenItsTimeComes() async throws {
        let store = InMemoryStateStore()
        let clock = ManualClock()
        let before = try await World(customer: Self.cards(), store: store, clock: clock, timeout: 60)
        let view = try await before.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let pending = try #require(try await before.requestPayment(view.id).pending)
        await Self.within("a deadline timer") { await clock.sleepersArrived(1) }
        await before.shutdown()
        clock.advance(by: .seconds(40))

        let after = try await World(customer: Self.cards(), store: store, clock: clock, timeout: 60)
        try await after.resume()
        await Self.within("a deadline timer") { await clock.sleepersArrived(1) }
        let since = try await after.mark()
        // 20 s were left, not another 60.
        clock.advance(by: .seconds(19))
        #expect(try await after.contexts.get(id: view.id, for: Caller(uid: 1000)).pending?.id == pending.id)
        clock.advance(by: .seconds(1))
        let finished = try await after.until(view.id, since: since, types: ["paymentContext.didFinish"])
        #expect(finished.lastResult?.error?.domainErrorName == "pendingActionTimedOut")
    }

    @Test func aLoadInterruptedByARestartRunsAgainAndTheWaitingRequestGoesOn() async throws {
        let store = InMemoryStateStore()
        let held = Self.cards()
        let gate = held.hold(.listPaymentMethods)
        let before = try await World(customer: held, store: store)
        let created = try await before.contexts.create(
            for: Caller(uid: 1000), PaymentContextTerms(session: "cs_1", defaultPaymentMethod: "pm_mc"))
        await Self.within("listPaymentMethods") { [c = held] in await c.called(.listPaymentMethods) }
        #expect(try await before.requestPayment(created.id).loading)
        // The "process" ends with the load held: it never finishes there.
        before.runner.cancel()

        let fresh = Self.cards()
        let after = try await World(customer: fresh, store: store)
        let since = try await after.mark()
        try await after.resume()
        let asked = try await after.until(created.id, since: since, types: ["paymentContext.pendingAction"])
        #expect(!asked.loading)
        #expect(asked.selected == "pm_mc")
        #expect(asked.pending?.kind == .didCreatePaymentResult)
        #expect(fresh.ops == [.clearCache, .retrieveCustomer, .listPaymentMethods])
        withExtendedLifetime(before) { gate.open() }
    }

    // MARK: Managed PaymentIntents

    @Test func aManagedIntentThatSucceedsFinishesWithSuccess() async throws {
        let world = try await World(customer: Self.cards())
        let secret = world.api.addIntent(status: "succeeded")
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let since = try await world.mark()
        let confirming = try await world.requestPayment(view.id, intent: secret)
        #expect(confirming.requestState == .requestingPayment)
        #expect(confirming.pending == nil)
        #expect(confirming.needs == nil)
        let done = try await world.until(view.id, since: since, types: ["paymentContext.didFinish"])
        #expect(done.lastResult == .init(status: .success, error: nil))
        #expect(done.requestState == .none)
        #expect(!(try await world.types(view.id, since: since)).contains("paymentContext.pendingAction"))
    }

    @Test func aManagedIntentLeftUnpaidFinishesWithPaymentFailed() async throws {
        let world = try await World(customer: Self.cards())
        let secret = world.api.addIntent(status: "requires_payment_method")
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let since = try await world.mark()
        _ = try await world.requestPayment(view.id, intent: secret)
        let done = try await world.until(view.id, since: since, types: ["paymentContext.didFinish"])
        #expect(done.lastResult?.status == .error)
        #expect(done.lastResult?.error?.domainErrorName == "paymentFailed")
        #expect(done.lastResult?.error?.domainData["paymentIntentStatus"] == "requires_payment_method")
    }

    @Test func aManagedIntentNeedingARedirectFinishesWhenTheRedirectReturns() async throws {
        let world = try await World(customer: Self.cards())
        let secret = world.api.addIntent(status: "requires_action", returnURL: "myshop://done?order=42")
        let intentID = secret.components(separatedBy: "_secret_")[0]
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let since = try await world.mark()
        _ = try await world.requestPayment(view.id, intent: secret)
        let redirecting = try await world.until(view.id, since: since, types: ["paymentContext.needsInput"])
        #expect(redirecting.needs == .redirect)
        #expect(redirecting.requestState == .requestingPayment)
        let session = try #require(redirecting.redirect)
        let redirect = try await world.redirects.get(id: session, for: Caller(uid: 1000))
        #expect(redirect.status == .inProgress)
        #expect(redirect.kind == .paymentIntent)
        #expect(redirect.paymentIntentId == intentID)

        world.api.setIntentStatus(intentID, "succeeded")
        #expect(
            try await world.redirects.handleURL(
                "myshop://done?order=42&payment_intent=\(intentID)", for: Caller(uid: 1000))
                == session)
        let done = try await world.until(view.id, since: since, types: ["paymentContext.didFinish"])
        #expect(done.lastResult == .init(status: .success, error: nil))
        #expect(done.redirect == nil)
        #expect(done.needs == nil)
        #expect(done.requestState == .none)
    }

    /// STPPaymentHandler reports a closed Safari view (com.stripe.lib 80) as `canceled`, which the
    /// payment context finishes as userCancellation; the bank page is the in-app flow, which
    /// regaining focus does not complete.
    @Test func closingTheBankPageOfAManagedIntentFinishesWithUserCancellation() async throws {
        let world = try await World(customer: Self.cards())
        let secret = world.api.addIntent(status: "requires_action")
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let since = try await world.mark()
        _ = try await world.requestPayment(view.id, intent: secret)
        let redirecting = try await world.until(view.id, since: since, types: ["paymentContext.needsInput"])
        let session = try #require(redirecting.redirect)
        #expect(try await world.redirects.foreground(for: Caller(uid: 1000)).isEmpty)
        _ = try await world.redirects.report(
            id: session, for: Caller(uid: 1000), outcome: .closed, url: nil, message: nil)
        let done = try await world.until(view.id, since: since, types: ["paymentContext.didFinish"])
        #expect(done.lastResult == .init(status: .userCancellation, error: nil))
        #expect(done.redirect == nil)
    }

    /// A QR code or banking app: the context waits for the PaymentIntent's poll (needs nextAction)
    /// and finishes with its verdict.
    @Test func aManagedIntentAwaitingTheCustomerFinishesWhenItsPollDoes() async throws {
        let world = try await World(customer: Self.cards())
        let secret = world.api.addIntent(status: "requires_payment_method")
        let intentID = secret.components(separatedBy: "_secret_")[0]
        world.api.setNextAction(intentID, ["type": "blik_authorize", "blik_authorize": [:]])
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let since = try await world.mark()
        _ = try await world.requestPayment(view.id, intent: secret)
        let waiting = try await world.until(view.id, since: since, types: ["paymentContext.needsInput"])
        #expect(waiting.needs == .nextAction && waiting.redirect == nil)
        await world.clock.sleepersArrived()
        world.api.setIntentStatus(intentID, "canceled")
        // The poll reads first 5 s after it started, as PaymentSheet does.
        world.clock.advance(by: .seconds(5))
        let done = try await world.until(view.id, since: since, types: ["paymentContext.didFinish"])
        #expect(done.lastResult == .init(status: .userCancellation, error: nil))
        #expect(done.needs == nil && done.requestState == .none)
    }

    @Test func cancellingARedirectingManagedIntentCancelsTheRedirect() async throws {
        let world = try await World(customer: Self.cards())
        let secret = world.api.addIntent(status: "requires_action")
        let view = try await world.create(.init(session: "cs_1", defaultPaymentMethod: "pm_visa"))
        let since = try await world.mark()
        _ = try await world.requestPayment(view.id, intent: secret)
        let redirecting = try await world.until(view.id, since: since, types: ["paymentContext.needsInput"])
        let session = try #require(redirecting.redirect)
        let cancelled = try await world.contexts.cancel(id: view.id, for: Caller(uid: 1000))
        #expect(cancelled.lastResult?.status == .userCancellation)
        #expect(cancelled.redirect == nil)
        #expect(try await world.redirects.get(id: session, for: Caller(uid: 1000)).status == .cancelled)
    }
}

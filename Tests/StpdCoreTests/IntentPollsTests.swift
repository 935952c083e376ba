import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// Intent polls over a scripted Stripe, an in-memory store and a manual clock: a poll reads the
/// intent at once, then waits on the clock, which the test moves; a restart resumes it.
@Suite(.timeLimit(.minutes(1)))
struct IntentPollsTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    final class World: Sendable {
        let api: FakePaymentsAPI
        let clock = ManualClock()
        let log: EventLog
        let background = BackgroundWork()
        let intents: IntentPollers
        let work: LeasedWork
        let handler: PaymentHandler
        let runner: Task<Void, Never>

        init(api: FakePaymentsAPI = FakePaymentsAPI(), store: InMemoryStateStore = InMemoryStateStore()) async throws {
            self.api = api
            log = try await EventLog(store: store, views: DomainViews())
            let now: @Sendable () -> Date = { [clock] in
                IntentPollsTests.t0.addingTimeInterval(Double(clock.now.offset.components.seconds))
            }
            work = LeasedWork(background: background)
            let sources = SourceService(api: api, log: log, background: background, clock: clock, now: now, work: work)
            intents = IntentPollers(api: api, log: log, background: background, clock: clock, now: now, work: work)
            let redirects = RedirectSessions(
                api: api, sources: sources, intents: intents, opener: nil, log: log, background: background, now: now,
                work: work)
            intents.follow(with: redirects)
            handler = PaymentHandler(api: api, redirects: redirects)
            runner = Task { [background] in await background.run() }
        }

        deinit { runner.cancel() }

        func shutdown() async {
            runner.cancel()
            await runner.value
        }

        /// A PaymentIntent awaiting the customer with `action`, confirmed through the handler.
        func awaiting(_ type: String, _ details: JSONValue = [:]) async throws -> (
            String, PaymentHandler.Handled<PaymentIntent>
        ) {
            let secret = api.addIntent(status: "requires_payment_method")
            let id = secret.components(separatedBy: "_secret_")[0]
            api.setNextAction(id, ["type": .string(type), .init(stringLiteral: type): details])
            let handled: PaymentHandler.Handled<PaymentIntent> = try await handler.confirm(
                PaymentIntent.self, PaymentIntentConfirmParams(clientSecret: secret, paymentMethodID: "pm_1"),
                for: Caller(uid: 1000), start: nil)
            return (id, handled)
        }

        func finished(_ id: String) async throws -> IntentRecord<PaymentIntent> {
            let found = try await log.wait(
                since: 0, filter: EventFilter(objectIds: [id], types: ["paymentIntent.finished"]), limit: 1,
                timeout: .seconds(10))
            return try JSONCoding.typed(IntentRecord<PaymentIntent>.self, from: try #require(found.events.first).object)
        }
    }

    @Test func aPollEndsWhenTheIntentLeavesRequiresAction() async throws {
        let world = try await World()
        let (id, handled) = try await world.awaiting("paynow_display_qr_code")
        #expect(handled.result == .pending && handled.poll?.poll?.purpose == .awaitCustomer)
        #expect(handled.poll?.poll?.deadline == Self.t0.addingTimeInterval(3600))
        await world.clock.sleepersArrived()
        world.api.setIntentStatus(id, "succeeded")
        // PaymentSheet's first read comes 5 s after the code is shown.
        world.clock.advance(by: .seconds(5))
        let done = try await world.finished(id)
        #expect(done.poll?.status == .finished && done.poll?.result == .succeeded)
        #expect(done.intent["status"] == "succeeded" && done.intent["client_secret"] == nil)
        #expect(world.intents.pollsRunning == 0)
    }

    @Test func aPollPastItsDeadlineEndsCanceledAfterOneLastRead() async throws {
        let world = try await World()
        let (id, _) = try await world.awaiting("blik_authorize")
        let before = world.api.retrievals(of: id)
        // Reads at 5 s, then every second to 59 s, then the last one 3 s after the 60 s deadline.
        for _ in 0..<63 {
            await world.clock.sleepersArrived()
            world.clock.advance(by: .seconds(1))
        }
        let done = try await world.finished(id)
        #expect(done.poll?.result == .canceled && done.poll?.error == nil)
        #expect(world.api.retrievals(of: id) - before == 56)
    }

    /// Cash App and Klarna are re-read through refresh (the SDK's supportsRefreshing), from the
    /// first read on; any other type by a plain read.
    @Test func aFollowUpRefreshesCashAppAndKlarna() async throws {
        let world = try await World()
        for (type, refreshed) in [("cashapp", true), ("klarna", true), ("ideal", false)] {
            let secret = world.api.addIntent(status: "succeeded")
            let id = secret.components(separatedBy: "_secret_")[0]
            _ = try await world.intents.paymentIntents.start(
                for: Caller(uid: 1000), id: id, clientSecret: secret, intent: nil, purpose: .followUp, entry: .confirm,
                paymentMethodType: type)
            _ = try await world.finished(id)
            #expect(world.api.refreshes(of: id) == (refreshed ? 1 : 0), "\(type)")
            #expect(world.api.retrievals(of: id) == (refreshed ? 0 : 1), "\(type)")
        }
    }

    /// Alipay: the return URL inside its native URL is requested before the intent is read.
    @Test func anAlipayFollowUpPingsItsReturnURLFirst() async throws {
        let world = try await World()
        let secret = world.api.addIntent(status: "succeeded")
        let id = secret.components(separatedBy: "_secret_")[0]
        let ping = "https://hooks.stripe.com/adapter/alipay/redirect/complete/src_1/src_client_secret_1"
        _ = try await world.intents.paymentIntents.start(
            for: Caller(uid: 1000), id: id, clientSecret: secret, intent: nil, purpose: .followUp, entry: .confirm,
            paymentMethodType: "alipay", pingURL: ping)
        _ = try await world.finished(id)
        #expect(world.api.calls.filter { $0.hasSuffix(id) || $0.hasPrefix("ping:") } == ["ping:\(ping)", "read:\(id)"])
    }

    @Test func aStoppedPollNeverReports() async throws {
        let world = try await World()
        let (id, _) = try await world.awaiting("pix_display_qr_code")
        await world.clock.sleepersArrived()
        let stopped = try await world.intents.paymentIntents.stop(id: id, for: Caller(uid: 1000))
        #expect(stopped.poll?.status == .stopped)
        world.api.setIntentStatus(id, "succeeded")
        world.clock.advance(by: .seconds(1))
        // The loop reads its record before its next request, finds it stopped and ends.
        while world.intents.pollsRunning > 0 { await Task.yield() }
        let types = try await world.log.wait(since: 0, filter: EventFilter(objectIds: [id]), limit: 10, timeout: .zero)
            .events.map(\.type)
        #expect(types == ["paymentIntent.pollStarted", "paymentIntent.pollStopped"])
        // Another uid's id answers as one that does not exist.
        await #expect(throws: DomainError.self) {
            try await world.intents.paymentIntents.get(id: id, for: Caller(uid: 7))
        }
    }

    @Test func aRestoredPollResumesWithItsStartAndDeadline() async throws {
        let store = InMemoryStateStore()
        let api = FakePaymentsAPI()
        let before = try await World(api: api, store: store)
        let (id, handled) = try await before.awaiting("upi_await_notification")
        await before.clock.sleepersArrived()
        await before.shutdown()

        let after = try await World(api: api, store: store)
        api.setIntentStatus(id, "succeeded")
        // What a starting daemon does (`Daemon.resume`): the work the store says must run starts again.
        try await after.work.adoptAll()
        // Restarted within its start delay, it still waits it out (its start is the stored one).
        await after.clock.sleepersArrived()
        after.clock.advance(by: .seconds(5))
        let done = try await after.finished(id)
        #expect(done.poll?.id == handled.poll?.poll?.id && done.poll?.deadline == handled.poll?.poll?.deadline)
        #expect(done.poll?.result == .succeeded)
    }
}

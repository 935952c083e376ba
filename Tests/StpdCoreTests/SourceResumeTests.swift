import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization
import Testing

@testable import StpdCore

/// app.background / app.foreground on a Source's poll as STPSourcePoller pauses and restarts: a
/// request in flight is not cancelled and its response counts; a restart runs the timeout check
/// before polling at once. Where stpd differs (the Objective-C poller's rule, 17.x to 20.x; the
/// Swift poller from 21.0 sends a second request), a restart sends nothing while one is in flight.
@Suite(.timeLimit(.minutes(1)))
struct SourceResumeTests {
    /// Polls held at a gate while `hold` is set; everything else answered by the fake.
    final class HeldPolls: PaymentsAPI {
        let fake = FakePaymentsAPI()
        let gate = Mutex<Gate?>(nil)
        func createSource(_ params: [String: JSONValue]) async throws -> Source { try await fake.createSource(params) }
        func retrieveSource(id: String, clientSecret: String) async throws -> Source {
            try await fake.retrieveSource(id: id, clientSecret: clientSecret)
        }
        func pollSource(id: String, clientSecret: String) async -> PollFetchResult {
            if let gate = gate.withLock({ $0 }) { await gate.wait() }
            return await fake.pollSource(id: id, clientSecret: clientSecret)
        }
        func retrievePaymentIntent(clientSecret: String) async throws -> PaymentIntent {
            try await fake.retrievePaymentIntent(clientSecret: clientSecret)
        }
        func confirmPaymentIntent(_ params: PaymentIntentConfirmParams) async throws -> PaymentIntent {
            try await fake.confirmPaymentIntent(params)
        }
        func retrieveSetupIntent(clientSecret: String) async throws -> SetupIntent {
            try await fake.retrieveSetupIntent(clientSecret: clientSecret)
        }
        func confirmSetupIntent(_ params: PaymentIntentConfirmParams) async throws -> SetupIntent {
            try await fake.confirmSetupIntent(params)
        }
        func verifyPaymentIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> PaymentIntent {
            try await fake.verifyPaymentIntentMicrodeposits(params)
        }
        func verifySetupIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> SetupIntent {
            try await fake.verifySetupIntentMicrodeposits(params)
        }
        func createCardPaymentMethod(_ card: CardInput) async throws -> PaymentMethod {
            try await fake.createCardPaymentMethod(card)
        }
    }

    let api = HeldPolls()
    let clock = ManualClock()
    let background = BackgroundWork()
    let app = Caller(uid: 1000)

    private func service() async throws -> (SourceService, EventLog, Task<Void, Never>) {
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews())
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let sources = SourceService(
            api: api, log: log, background: background, clock: clock,
            now: { [clock] in start.addingTimeInterval(Double(clock.now.offset.components.seconds)) })
        let runner = Task { [background] in await background.run() }
        return (sources, log, runner)
    }

    /// The record its `source.pollFinished` event carries.
    private func finished(_ log: EventLog, _ id: String) async throws -> SourceRecord {
        let found = try await log.wait(
            since: 0, filter: EventFilter(objectIds: [id], types: ["source.pollFinished"]), limit: 1,
            timeout: .seconds(10))
        return try JSONCoding.typed(SourceRecord.self, from: try #require(found.events.first).object)
    }

    @Test func foregroundWithAPollRequestInFlightSendsNoSecondRequest() async throws {
        let (sources, log, runner) = try await service()
        defer { runner.cancel() }
        let id = api.fake.addSource()
        _ = try await sources.retrieve(id: id, clientSecret: "\(id)_secret", for: app)
        let gate = Gate()
        api.gate.withLock { $0 = gate }
        _ = try await sources.startPoll(id: id, for: app, clientSecret: nil, timeout: nil)
        await gate.arrivals(1)
        #expect(try await sources.pauseAll(for: app) == [id])
        #expect(try await sources.resumeAll(for: app) == [id])
        api.fake.setSourceStatus(id, "chargeable")
        gate.open()
        let record = try await finished(log, id)
        #expect(record.poll?.sourceStatus == "chargeable")
        #expect(api.fake.state.withLock { $0.polls } == 1)
    }

    @Test func aResponseArrivingWhilePausedStillFinishesThePoll() async throws {
        let (sources, log, runner) = try await service()
        defer { runner.cancel() }
        let id = api.fake.addSource(status: "consumed")
        _ = try await sources.retrieve(id: id, clientSecret: "\(id)_secret", for: app)
        let gate = Gate()
        api.gate.withLock { $0 = gate }
        _ = try await sources.startPoll(id: id, for: app, clientSecret: nil, timeout: nil)
        await gate.arrivals(1)
        #expect(try await sources.pauseAll(for: app) == [id])
        gate.open()
        #expect(try await finished(log, id).poll?.sourceStatus == "consumed")
    }

    @Test func foregroundPastTheDeadlineFinishesWithoutARequest() async throws {
        let (sources, log, runner) = try await service()
        defer { runner.cancel() }
        let id = api.fake.addSource()
        _ = try await sources.retrieve(id: id, clientSecret: "\(id)_secret", for: app)
        _ = try await sources.startPoll(id: id, for: app, clientSecret: nil, timeout: 10)
        await clock.sleepersArrived(1)
        #expect(try await sources.pauseAll(for: app) == [id])
        await until { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(20))
        #expect(try await sources.resumeAll(for: app) == [id])
        let record = try await finished(log, id)
        #expect(record.poll?.sourceStatus == "pending")
        #expect(api.fake.state.withLock { $0.polls } == 1)
    }
}

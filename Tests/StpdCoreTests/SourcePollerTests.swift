import Foundation
import JSONRPC
import StripeAPI
import Synchronization
import Testing

@testable import StpdCore

/// `SourcePoller` (spec §1.4). Timers and elapsed time both run on one `ManualClock`; Stripe is a
/// script, and each request's time on that clock is recorded, so intervals are asserted exactly.
@Suite("SourcePoller", .timeLimit(.minutes(1)))
struct SourcePollerTests {
    @Test func pollsAtOnceThenEvery1_5sWhilePending() async {
        let h = PollHarness([.pending, .pending, .pending, .status("chargeable")])
        let end = await h.runToEnd()
        #expect(h.api.times == [0, 1.5, 3, 4.5])
        #expect(end == .finished(source: sourceJSON("chargeable"), error: nil))
        #expect(h.records.map(\.requestCount) == [1, 2, 3, 4])
        #expect(h.poller.progress.latestSource == sourceJSON("chargeable"))
    }

    @Test func serverErrorsBackOffAndFiveInARowFinishWithTheLastError() async {
        let h = PollHarness((1...5).map { .http(500, "boom \($0)") })
        let end = await h.runToEnd()
        // Waits 3, 6, 12, 24; the fifth failure reaches the retry limit.
        #expect(h.api.times == [0, 3, 9, 21, 45])
        #expect(end == .finished(source: nil, error: PollError(stripeError(500, "boom 5"))))
        #expect(h.records.map(\.interval) == [3, 6, 12, 24, 24])
        #expect(h.records.map(\.retryCount) == [1, 2, 3, 4, 5])
    }

    @Test func backoffIsCappedAt24Seconds() async {
        var progress = PollProgress(startedAt: t0, requestedTimeout: 300)
        progress.interval = 12
        let h = PollHarness([.http(503, "a"), .http(502, "b"), .http(500, "c"), .status("failed")], progress: progress)
        _ = await h.runToEnd()
        #expect(h.api.times == [0, 24, 48, 72])
    }

    @Test func connectivityErrorsRetryAtTheSameIntervalAndCountTowardTheLimit() async {
        let h = PollHarness([.http(500, "down")] + (1...4).map { .offline("offline \($0)") })
        let end = await h.runToEnd()
        #expect(h.api.times == [0, 3, 6, 9, 12])
        #expect(end == .finished(source: nil, error: PollError(offlineError("offline 4"))))
    }

    @Test func a200ResetsTheIntervalAndRetryCount() async {
        let h = PollHarness([.http(500, "a"), .http(500, "b"), .pending, .offline("c"), .pending, .status("consumed")])
        let end = await h.runToEnd()
        #expect(h.api.times == [0, 3, 9, 10.5, 12, 13.5])
        #expect(h.records.map(\.retryCount) == [1, 2, 0, 1, 0, 0])
        #expect(
            h.records.map(\.lastError) == [
                PollError(stripeError(500, "a")), PollError(stripeError(500, "b")), nil, PollError(offlineError("c")),
                nil, nil,
            ])
        #expect(end == .finished(source: sourceJSON("consumed"), error: nil))
    }

    @Test func a4xxFinishesAtOnceWithTheParsedError() async {
        let error = StripeError(
            body: [
                "error": ["type": "invalid_request_error", "code": "resource_missing", "message": "No such source"]
            ],
            httpStatus: 404, requestID: "req_1")!
        let h = PollHarness([.pending, .result(.httpError(status: 404, error))])
        let end = await h.runToEnd()
        #expect(h.api.times == [0, 1.5])
        #expect(end == .finished(source: sourceJSON("pending"), error: PollError(error)))
        #expect(h.records.last?.lastError?.stripeError == error)
    }

    @Test func aTransportFailureFinishesWithItsError() async {
        let failure = StripeError(kind: .connection, message: "TLS handshake failed")
        let h = PollHarness([.pending, .result(.transportFailure(failure))])
        let end = await h.runToEnd()
        #expect(h.api.times == [0, 1.5])
        #expect(end == .finished(source: sourceJSON("pending"), error: PollError(failure)))
    }

    @Test func timeoutFinishesWithTheLastPendingSourceAndNoError() async {
        let h = PollHarness([], timeout: 10)
        let end = await h.runToEnd()
        // Checked only when the next poll is scheduled: the poll after 9 s goes out at 10.5 s.
        #expect(h.api.times == stride(from: 0, through: 10.5, by: 1.5).map { $0 })
        #expect(end == .finished(source: sourceJSON("pending"), error: nil))
    }

    @Test func timeoutIsCappedAt300Seconds() async {
        let h = PollHarness([], timeout: 1000)
        #expect(h.poller.progress.timeout == 300)
        _ = await h.runToEnd()
        #expect(h.api.times.count == 201)
        #expect(h.api.times.last == 300)
    }

    @Test func atLeastTwoRequestsGoOutBeforeATimeout() async {
        let h = PollHarness([], timeout: 0)
        let end = await h.runToEnd()
        #expect(h.api.times == [0, 1.5])
        #expect(end == .finished(source: sourceJSON("pending"), error: nil))
    }

    @Test(arguments: ["chargeable", "consumed", "canceled", "failed", "unknown", "something_new"])
    func anyStatusButPendingFinishesWithoutError(status: String) async {
        let h = PollHarness([.status(status)])
        let end = await h.runToEnd()
        #expect(h.api.times == [0])
        #expect(end == .finished(source: sourceJSON(status), error: nil))
    }

    @Test func anUndecodable200ForgetsTheSourceAndFinishesWithTheGenericError() async {
        let h = PollHarness([.pending, .result(.source(nil))])
        let end = await h.runToEnd()
        #expect(end == .finished(source: nil, error: .genericConnection))
        #expect(h.poller.progress.latestSource == nil)
        #expect(PollError.genericConnection.stripeError.kind == .connection)
    }

    @Test func pauseWhileWaitingReturnsAtOnceAndResumePollsAtOnce() async {
        let h = PollHarness([.pending, .status("chargeable")])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.poller.pause()
        #expect(await run.value == .paused)
        #expect(h.clock.sleeperCount == 0)
        h.clock.advance(by: .seconds(100))
        #expect(h.api.times == [0])

        let end = await h.runToEnd()
        #expect(h.api.times == [0, 100])
        #expect(end == .finished(source: sourceJSON("chargeable"), error: nil))
    }

    @Test func pauseLetsTheRequestInFlightFinishThenReturns() async {
        let gate = Gate()
        let h = PollHarness([.pending, .held(.status("pending"), gate)])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.clock.advance(by: .seconds(1.5))
        await gate.arrivals(1)
        h.poller.pause()
        gate.open()
        #expect(await run.value == .paused)
        #expect(h.records.map(\.requestCount) == [1, 2])
        #expect(h.clock.sleeperCount == 0)
    }

    @Test func pauseWithARequestInFlightPastTheDeadlineStillFinishes() async {
        let gate = Gate()
        let h = PollHarness([.pending, .pending, .held(.status("pending"), gate)], timeout: 3)
        let run = h.start()
        for _ in 0..<2 {
            await h.clock.sleepersArrived(1)
            h.clock.advance(by: .seconds(1.5))
        }
        await gate.arrivals(1)
        h.poller.pause()
        gate.open()
        #expect(await run.value == .finished(source: sourceJSON("pending"), error: nil))
        #expect(h.api.times == [0, 1.5, 3])
    }

    @Test func resumingPastTheDeadlineFinishesWithoutARequest() async {
        let h = PollHarness([.pending], timeout: 10)
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.poller.pause()
        #expect(await run.value == .paused)
        h.clock.advance(by: .seconds(20))
        // The SDK's restart is Schedule(0), whose timeout check comes first.
        #expect(await h.poller.run { _ in } == .finished(source: sourceJSON("pending"), error: nil))
        #expect(h.api.times == [0])
    }

    /// A difference: a restart sends nothing while a request is in flight, as the Objective-C
    /// poller (17.x to 20.x); the response schedules the next poll as if no pause had happened. The
    /// Swift poller (21.0 to the newest) checks only its timer and sends a second request.
    @Test func resumingWithARequestInFlightSendsNoSecondRequest() async {
        let gate = Gate()
        let h = PollHarness([.pending, .held(.status("pending"), gate), .status("chargeable")])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.clock.advance(by: .seconds(1.5))
        await gate.arrivals(1)
        h.poller.pause()
        #expect(h.poller.resume() == false)
        gate.open()
        await h.clock.sleepersArrived(1)
        h.clock.advance(by: .seconds(1.5))
        #expect(await run.value == .finished(source: sourceJSON("chargeable"), error: nil))
        #expect(h.api.times == [0, 1.5, 3])
    }

    @Test func resumingAfterThePausedRunReturnedRunsAgain() async {
        let h = PollHarness([.pending, .status("chargeable")])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.poller.pause()
        #expect(await run.value == .paused)
        #expect(h.poller.resume() == true)
        #expect(await h.poller.run { _ in } == .finished(source: sourceJSON("chargeable"), error: nil))
        #expect(h.api.times == [0, 0])
    }

    @Test func aRestartedFirstRunChecksTheDeadlineBeforePolling() async {
        var saved = PollProgress(startedAt: t0.addingTimeInterval(-1000), requestedTimeout: 60)
        saved.requestCount = 2
        saved.latestSource = sourceJSON("pending")
        let h = PollHarness([], progress: saved)
        #expect(await h.poller.run(restart: true) { _ in } == .finished(source: sourceJSON("pending"), error: nil))
        #expect(h.api.times.isEmpty)
    }

    @Test func aRestoredPollPastItsDeadlineMakesOneRequestThenFinishes() async {
        var saved = PollProgress(startedAt: t0.addingTimeInterval(-1000), requestedTimeout: 60)
        saved.requestCount = 4
        saved.latestSource = sourceJSON("pending")
        let fresh = sourceJSON("pending", amount: 2)
        let h = PollHarness([.result(.source(try! Source(json: fresh)))], progress: saved)
        let end = await h.runToEnd()
        #expect(h.api.times == [0])
        #expect(end == .finished(source: fresh, error: nil))
        #expect(h.records.map(\.requestCount) == [5])
    }

    @Test func stopWhileWaitingNeverReports() async {
        let h = PollHarness([.pending, .status("chargeable")])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.poller.stop()
        #expect(await run.value == .stopped)
        #expect(h.clock.sleeperCount == 0)
        #expect(await h.poller.run { _ in } == .stopped)
        #expect(h.api.times == [0])
    }

    @Test func stopCancelsTheRequestInFlightAndIgnoresItsResponse() async {
        let h = PollHarness([.pending, .untilCancelled])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        h.clock.advance(by: .seconds(1.5))
        await h.clock.sleepersArrived(1)  // the request in flight, waiting for cancellation
        h.poller.stop()
        #expect(await run.value == .stopped)
        #expect(h.api.cancelledCalls == 1)
        #expect(h.records.count == 1)
    }

    @Test func stopDuringAHeldRequestIgnoresItsResult() async {
        let gate = Gate()
        let h = PollHarness([.held(.status("chargeable"), gate)])
        let run = h.start()
        await gate.arrivals(1)
        h.poller.stop()
        gate.open()
        #expect(await run.value == .stopped)
        #expect(h.records.isEmpty)
    }

    @Test func aCancelledRequestStopsSilently() async {
        let h = PollHarness([.pending, .result(.cancelled)])
        let end = await h.runToEnd()
        #expect(end == .stopped)
        #expect(h.records.count == 1)
        #expect(await h.poller.run { _ in } == .stopped)
    }

    @Test func cancellingTheRunTaskPausesWithProgressIntact() async {
        let h = PollHarness([.pending])
        let run = h.start()
        await h.clock.sleepersArrived(1)
        run.cancel()
        #expect(await run.value == .paused)
        #expect(h.poller.progress.requestCount == 1)
    }

    @Test func progressAndErrorsSurviveJSON() throws {
        var progress = PollProgress(startedAt: t0, requestedTimeout: 42)
        progress.latestSource = sourceJSON("pending")
        progress.lastError = PollError(
            StripeError(
                body: [
                    "error": [
                        "type": "card_error", "code": "card_declined", "decline_code": "do_not_honor", "message": "m",
                    ]
                ],
                httpStatus: 402, requestID: "req_9")!)
        let data = try JSONEncoder().encode(progress)
        let back = try JSONDecoder().decode(PollProgress.self, from: data)
        #expect(back == progress)
        #expect(back.lastError?.stripeError.cardErrorCode == .cardDeclined)
        #expect(back.lastError?.rpcData == progress.lastError?.stripeError.rpcData)
        let generic = try JSONDecoder().decode(PollError.self, from: JSONEncoder().encode(PollError.genericConnection))
        #expect(generic == .genericConnection)
    }
}

// MARK: - Fixtures

private func sourceJSON(_ status: String, amount: Int64 = 1) -> JSONValue {
    [
        "id": "src_1", "object": "source", "status": .string(status), "type": "sofort", "livemode": false,
        "amount": .int(amount),
    ]
}

private func stripeError(_ status: Int, _ message: String) -> StripeError {
    StripeError(kind: .api, type: "api_error", message: message, httpStatus: status)
}

private func offlineError(_ message: String) -> StripeError { StripeError(kind: .connection, message: message) }

private func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// One scripted response.
private enum Step: Sendable {
    case result(PollFetchResult)
    /// Returns `result` once the gate opens.
    indirect case held(Step, Gate)
    /// Waits on the clock until its task is cancelled, then returns `.cancelled`.
    case untilCancelled

    static let pending = Step.status("pending")
    static func status(_ s: String) -> Step { .result(.source(try! Source(json: sourceJSON(s)))) }
    static func http(_ status: Int, _ message: String) -> Step {
        .result(.httpError(status: status, stripeError(status, message)))
    }
    static func offline(_ message: String) -> Step { .result(.connectivity(offlineError(message))) }
}

/// Stripe as a script: call n takes step n, a pending source once the script runs out. Records the
/// clock time of every call.
private final class ScriptedSources: Sendable {
    private struct State {
        var steps: [Step]
        var times: [Double] = []
        var cancelledCalls = 0
    }

    private let state: Mutex<State>
    private let clock: ManualClock

    init(_ steps: [Step], clock: ManualClock) {
        state = Mutex(State(steps: steps))
        self.clock = clock
    }

    var times: [Double] { state.withLock { $0.times } }
    var cancelledCalls: Int { state.withLock { $0.cancelledCalls } }

    func fetch(id: String, secret: String) async -> PollFetchResult {
        #expect(id == "src_1" && secret == "src_1_secret")
        let step = state.withLock { s in
            s.times.append(seconds(clock.now.offset))
            return s.steps.isEmpty ? Step.pending : s.steps.removeFirst()
        }
        return await play(step)
    }

    private func play(_ step: Step) async -> PollFetchResult {
        switch step {
        case .result(let result):
            return result
        case .held(let step, let gate):
            await gate.wait()
            return await play(step)
        case .untilCancelled:
            do {
                try await clock.sleep(for: .seconds(1_000_000))
                return .source(nil)
            } catch {
                state.withLock { $0.cancelledCalls += 1 }
                return .cancelled
            }
        }
    }
}

/// A poller on a manual clock (elapsed time is `t0` plus the clock's offset), recording what it saves.
private final class PollHarness: Sendable {
    let clock = ManualClock()
    let api: ScriptedSources
    let poller: SourcePoller
    private let saved = Mutex<[PollProgress]>([])
    private let running = Mutex(false)

    init(_ steps: [Step], timeout: Double = 300, progress: PollProgress? = nil) {
        let clock = clock
        let api = ScriptedSources(steps, clock: clock)
        self.api = api
        poller = SourcePoller(
            sourceID: "src_1", clientSecret: "src_1_secret",
            progress: progress ?? PollProgress(startedAt: t0, requestedTimeout: timeout),
            timers: TimerQueue(clock: clock),
            now: { t0.addingTimeInterval(seconds(clock.now.offset)) },
            fetch: { id, secret in await api.fetch(id: id, secret: secret) })
    }

    var records: [PollProgress] { saved.withLock { $0 } }

    func start() -> Task<PollEnd, Never> {
        running.withLock { $0 = true }
        return Task { [poller] in
            let end = await poller.run { progress in self.saved.withLock { $0.append(progress) } }
            self.running.withLock { $0 = false }
            return end
        }
    }

    /// Runs the poller, moving the clock on in 0.5 s steps (every interval is a multiple) whenever it
    /// waits, until `run()` returns.
    func runToEnd() async -> PollEnd {
        let run = start()
        while true {
            await until { !running.withLock { $0 } || clock.sleeperCount > 0 }
            if !running.withLock({ $0 }) { return await run.value }
            clock.advance(by: .milliseconds(500))
        }
    }
}

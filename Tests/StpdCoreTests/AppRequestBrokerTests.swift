import Foundation
import JSONRPC
import StpdProtocol
@_spi(Testing) import StpdValues
import Testing

@testable import StpdCore

/// Asking the app over the socket: requests recorded with their events, answered by their owner
/// or root, timed out on a manual clock, cancelled with their asker, abandoned when their asker is gone.
@Suite(.timeLimit(.minutes(1)))
struct AppRequestBrokerTests {
    let fx: AppRequestFixture

    init() async throws { fx = try await AppRequestFixture() }

    /// Starts an ask as uid 1000 and returns it with its pending event.
    func asking(
        _ operation: String = "retrieveCustomer", params: JSONValue = [:], timeout: Duration = .seconds(30),
        owner: UInt32 = 1000
    ) async throws -> (task: Task<JSONValue, any Error>, pending: Event) {
        let broker = fx.broker
        let task = Task {
            try await broker.ask(
                owner: owner, session: "cuss_1", operation: operation, params: params, timeout: timeout)
        }
        return (task, try await fx.next())
    }

    @Test func askRecordsThePendingRequestAndReturnsTheAnswer() async throws {
        let (task, pending) = try await asking("attachPaymentMethod", params: ["paymentMethod": "pm_1"])
        #expect(pending.type == "appRequest.pending")
        #expect(pending.objectKind == "appRequest")
        #expect(pending.ownerUID == 1000)
        let id = pending.objectId
        #expect(id.hasPrefix("areq_") && id.count == 5 + 32)
        #expect(
            pending.object == [
                "id": .string(id), "object": "app_request", "session": "cuss_1", "operation": "attachPaymentMethod",
                "params": ["paymentMethod": "pm_1"], "state": "pending",
                "deadline": .string(t0.addingTimeInterval(30).formatted(.iso8601)),
            ])
        #expect(pending.object["deadline"] == "2023-11-14T22:13:50Z")
        #expect(fx.broker.pendingCount == 1)
        #expect(fx.broker.pendingRequests.map(\.id) == [id])
        #expect(try await fx.store.object(id: id)?.state["state"] == "pending")

        try await fx.broker.answer(
            id: id, for: Caller(uid: 1000), .result(["id": "pm_1", "attached": true]))
        #expect(try await task.value == ["id": "pm_1", "attached": true])

        let answered = try await fx.next()
        #expect(answered.type == "appRequest.answered")
        #expect(answered.objectId == id)
        #expect(answered.object["state"] == "answered")
        // The result itself is never recorded (it may be an ephemeral key's secret).
        #expect(answered.object["result"] == nil)
        #expect(answered.object["params"] == ["paymentMethod": "pm_1"])
        #expect(fx.broker.pendingCount == 0)
        #expect(try await fx.store.object(id: id)?.state["state"] == "answered")
        // The timer is gone with the request.
        #expect(fx.clock.sleeperCount == 0)
    }

    @Test func theSweepRemovesFinishedRequestsOnly() async throws {
        let (task, pending) = try await asking("attachPaymentMethod", params: ["paymentMethod": "pm_1"])
        #expect(try await fx.broker.sweep(before: .distantFuture) == 0, "a pending request stays")
        try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result(.null))
        _ = try await task.value
        #expect(try await fx.broker.sweep(before: .distantPast) == 0)
        #expect(try await fx.broker.sweep(before: .distantFuture) == 1)
        #expect(try await fx.store.object(id: pending.objectId) == nil)
    }

    @Test func anAnswerWithoutResultIsNull() async throws {
        let (task, pending) = try await asking("detachPaymentMethod")
        try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result(.null))
        #expect(try await task.value == .null)
    }

    @Test func anErrorAnswerFailsTheAsk() async throws {
        let (task, pending) = try await asking()
        try await fx.broker.answer(
            id: pending.objectId, for: Caller(uid: 1000),
            .failure(AppRequestFailure(message: "our backend is down", code: "backend_down")))
        await #expect(
            throws: AppRequestError.failed(
                message: "our backend is down", code: "backend_down", operation: "retrieveCustomer")
        ) {
            try await task.value
        }
        let answered = try await fx.next()
        #expect(answered.type == "appRequest.answered")
        #expect(answered.object["error"] == ["message": "our backend is down", "code": "backend_down"])
    }

    @Test func noAnswerWithinTheTimeoutTimesOut() async throws {
        let (task, pending) = try await asking("attachPaymentMethod", timeout: .seconds(30))
        await fx.clock.sleepersArrived()
        fx.clock.advance(by: .seconds(29))
        #expect(fx.clock.sleeperCount == 1)
        #expect(fx.broker.pendingCount == 1)

        fx.clock.advance(by: .seconds(1))
        let error = await #expect(throws: AppRequestError.self) { try await task.value }
        #expect(error == .timedOut(operation: "attachPaymentMethod", after: .seconds(30)))
        #expect("\(error!)" == "the app did not answer attachPaymentMethod within 30 s")

        let timedOut = try await fx.next()
        #expect(timedOut.type == "appRequest.timedOut")
        #expect(timedOut.objectId == pending.objectId)
        #expect(timedOut.object["state"] == "timedOut")
        #expect(fx.broker.pendingCount == 0)

        await #expect(throws: AppRequestError.alreadyFinished(id: pending.objectId, state: "timedOut")) {
            try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result([:]))
        }
    }

    @Test func answeringTwiceIsRefused() async throws {
        let (task, pending) = try await asking()
        try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result(["n": 1]))
        #expect(try await task.value == ["n": 1])
        await #expect(throws: AppRequestError.alreadyFinished(id: pending.objectId, state: "answered")) {
            try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result(["n": 2]))
        }
        #expect(
            "\(AppRequestError.alreadyFinished(id: pending.objectId, state: "answered"))"
                == "app request \(pending.objectId) is already finished (answered)")
        _ = try await fx.next()
        #expect(fx.inbox.received.map(\.type) == ["appRequest.pending", "appRequest.answered"])
    }

    /// Another uid's request answers as one that does not exist: its id's existence is not told.
    @Test func onlyTheOwnerOrRootMayAnswer() async throws {
        let (task, pending) = try await asking(owner: 1000)
        await #expect(throws: AppRequestError.notFound(id: pending.objectId)) {
            try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1001), .result(["x": 1]))
        }
        #expect(fx.broker.pendingCount == 1)
        try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 0), .result(["by": "root"]))
        #expect(try await task.value == ["by": "root"])
        // Once finished, another uid still learns nothing.
        await #expect(throws: AppRequestError.notFound(id: pending.objectId)) {
            try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1001), .result(.null))
        }
    }

    @Test func getShowsARequestAsItsLastEventDid() async throws {
        let (task, pending) = try await asking(owner: 1000)
        let id = pending.objectId
        #expect(try await fx.broker.get(id: id, for: Caller(uid: 1000)) == pending.object)
        try await fx.broker.answer(id: id, for: Caller(uid: 1000), .result(["ok": true]))
        _ = try await task.value
        let answered = try await fx.next()
        #expect(try await fx.broker.get(id: id, for: Caller(uid: 0)) == answered.object)
        // Another uid's request is as a missing one.
        await #expect(throws: AppRequestError.notFound(id: id)) {
            try await fx.broker.get(id: id, for: Caller(uid: 1001))
        }
        await #expect(throws: AppRequestError.notFound(id: "areq_nope")) {
            try await fx.broker.get(id: "areq_nope", for: Caller(uid: 1000))
        }
    }

    @Test func unknownIDsAreNotFound() async throws {
        await #expect(throws: AppRequestError.notFound(id: "areq_nope")) {
            try await fx.broker.answer(id: "areq_nope", for: Caller(uid: 1000), .result(.null))
        }
        // Another kind of object is no app request.
        try await fx.log.apply([change("pctx_1", owner: 1000)])
        await #expect(throws: AppRequestError.notFound(id: "pctx_1")) {
            try await fx.broker.answer(id: "pctx_1", for: Caller(uid: 1000), .result(.null))
        }
    }

    @Test func cancellingTheAskerCancelsTheRequest() async throws {
        let (task, pending) = try await asking(timeout: .seconds(30))
        await fx.clock.sleepersArrived()
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }

        let cancelled = try await fx.next()
        #expect(cancelled.type == "appRequest.cancelled")
        #expect(cancelled.objectId == pending.objectId)
        #expect(cancelled.object["state"] == "cancelled")
        #expect(fx.broker.pendingCount == 0)
        #expect(fx.clock.sleeperCount == 0)
        #expect(try await fx.store.object(id: pending.objectId)?.state["state"] == "cancelled")
        await #expect(throws: AppRequestError.alreadyFinished(id: pending.objectId, state: "cancelled")) {
            try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result([:]))
        }
    }

    @Test func anAskCancelledBeforeItWaitsIsCancelled() async throws {
        let broker = fx.broker
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await broker.ask(owner: 1000, session: "s", operation: "op", params: [:], timeout: .seconds(5))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        // The in-memory store records the request and then its cancellation at once.
        #expect(try await fx.next().type == "appRequest.pending")
        #expect(try await fx.next().type == "appRequest.cancelled")
        #expect(broker.pendingCount == 0)
    }

    /// SQLite refuses writes from a cancelled task: the end of a request is recorded all the same,
    /// whether the asker or the answerer was cancelled.
    @Test func endsAreRecordedInSQLiteFromCancelledTasks() async throws {
        try await StoreKind.sqlite.withStore { store in
            let fx = try await AppRequestFixture(store: store)
            let broker = fx.broker
            let asker = Task {
                try await broker.ask(owner: 1000, session: "s", operation: "a", params: [:], timeout: .seconds(5))
            }
            let first = try await fx.next()
            asker.cancel()
            await #expect(throws: CancellationError.self) { try await asker.value }
            #expect(try await fx.next().type == "appRequest.cancelled")
            #expect(try await store.object(id: first.objectId)?.state["state"] == "cancelled")

            let asked = Task {
                try await broker.ask(owner: 1000, session: "s", operation: "b", params: [:], timeout: .seconds(5))
            }
            let second = try await fx.next()
            let answerer = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await broker.answer(id: second.objectId, for: Caller(uid: 1000), .result("ok"))
            }
            try await answerer.value
            #expect(try await asked.value == "ok")
            #expect(try await store.object(id: second.objectId)?.state["state"] == "answered")
        }
    }

    @Test func concurrentRequestsGetTheirOwnAnswers() async throws {
        let (first, firstPending) = try await asking("retrieveCustomer")
        let (second, secondPending) = try await asking("listPaymentMethods")
        #expect(fx.broker.pendingCount == 2)
        #expect(firstPending.objectId != secondPending.objectId)
        try await fx.broker.answer(id: secondPending.objectId, for: Caller(uid: 1000), .result("second"))
        try await fx.broker.answer(id: firstPending.objectId, for: Caller(uid: 1000), .result("first"))
        #expect(try await first.value == "first")
        #expect(try await second.value == "second")
        #expect(fx.broker.pendingCount == 0)
    }

    @Test func anAnswerThatCannotBeRecordedFailsBothSides() async throws {
        let store = FailingApplyStore()
        let fx = try await AppRequestFixture(store: store)
        let broker = fx.broker
        let task = Task {
            try await broker.ask(owner: 1000, session: "s", operation: "op", params: [:], timeout: .seconds(5))
        }
        let pending = try await fx.next()
        store.arm()
        await #expect(throws: FailingApplyStore.Refused.self) {
            try await broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result(["x": 1]))
        }
        await #expect(throws: FailingApplyStore.Refused.self) { try await task.value }
        #expect(broker.pendingCount == 0)
    }

    @Test func askFailsWhenThePendingRequestCannotBeRecorded() async throws {
        let store = FailingApplyStore()
        let fx = try await AppRequestFixture(store: store)
        store.arm()
        await #expect(throws: FailingApplyStore.Refused.self) {
            try await fx.broker.ask(owner: 1000, session: "s", operation: "op", params: [:], timeout: .seconds(5))
        }
        #expect(fx.broker.pendingCount == 0)
    }

    /// Requests whose asker is gone (an earlier process's, or in a fleet a dead daemon's): answering
    /// one says so and abandons it, and adoption (at start, and in a fleet every half lease)
    /// abandons the rest, leaving this process's own requests alone.
    @Test func requestsWhoseAskerIsGoneAreAbandoned() async throws {
        // An earlier process's requests, as it stored them: two left pending, one answered.
        func leftover(_ id: String, _ state: String) -> StateChange {
            let stamp = JSONValue.double(t0.timeIntervalSinceReferenceDate)
            return StateChange(
                object: StoredObject(
                    id: id, kind: "appRequest", ownerUID: 1000,
                    state: [
                        "id": .string(id), "object": "app_request", "state": .string(state), "operation": "op",
                        "session": "cses_1", "params": [:], "deadline": "2023-11-14T22:13:20Z", "owner": 1000,
                        "createdAt": stamp, "updatedAt": stamp,
                    ],
                    createdAt: t0, updatedAt: t0, status: state, live: state == "pending",
                    finished: state != "pending"),
                eventType: EventType(testing: "appRequest.\(state)"))
        }
        try await fx.log.apply([
            leftover("areq_old1", "pending"), leftover("areq_old2", "answered"), leftover("areq_old3", "pending"),
        ])
        for id in ["areq_old1", "areq_old2", "areq_old3"] { #expect(try await fx.next().objectId == id) }
        // Asked by no one here, and no daemon holds its lease: answering it says so, and ends it.
        await #expect(throws: AppRequestError.alreadyFinished(id: "areq_old1", state: "abandoned")) {
            try await fx.broker.answer(id: "areq_old1", for: Caller(uid: 1000), .result(.null))
        }
        let abandoned = try await fx.next()
        #expect(abandoned.type == "appRequest.abandoned")
        #expect(abandoned.objectId == "areq_old1")
        #expect(
            abandoned.object == [
                "id": "areq_old1", "object": "app_request", "state": "abandoned", "operation": "op",
                "session": "cses_1", "params": [:], "deadline": "2023-11-14T22:13:20Z",
            ])
        // A live request of this process is left alone by adoption.
        let (task, pending) = try await asking()
        let runner = Task { [background = fx.background] in await background.run() }
        defer { runner.cancel() }
        try await fx.work.adoptAll()
        let adopted = try await fx.next()
        #expect((adopted.type, adopted.objectId) == ("appRequest.abandoned", "areq_old3"))
        #expect(try await fx.store.object(id: "areq_old2")?.state["state"] == "answered")
        #expect(try await fx.store.object(id: pending.objectId)?.state["state"] == "pending")

        try await fx.broker.answer(id: pending.objectId, for: Caller(uid: 1000), .result("live"))
        #expect(try await task.value == "live")
    }

    /// The domain's own wording; the wire codes are checked in StpdDaemonTests (DomainErrorMappingTests).
    @Test func errorsDescribeThemselves() {
        let failedError = AppRequestError.failed(message: "declined", code: nil, operation: "attachPaymentMethod")
        #expect("\(failedError)" == "the app answered attachPaymentMethod with an error: declined")
        let malformed = AppRequestError.malformedAnswer(
            operation: "retrieveCustomer", detail: "missing required field id")
        #expect("\(malformed)" == "the app's answer to retrieveCustomer is not usable: missing required field id")
        #expect(AppRequestError.format(.seconds(30)) == "30 s")
        #expect(AppRequestError.format(.milliseconds(250)) == "0.25 s")
    }
}

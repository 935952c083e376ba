import Foundation
import JSONRPC
import StpctlKit
import Testing

@Suite struct SourceRenderTests {
    let utc = TimeZone(identifier: "UTC")!
    let now = Date(timeIntervalSince1970: 1_735_787_045)  // 2025-01-02T03:04:05Z

    func poll(_ status: String, deadline: String = "2025-01-02T03:08:17Z", error: JSONValue = .null) -> JSONValue {
        [
            "status": .string(status), "startedAt": "2025-01-02T03:03:17Z", "deadline": .string(deadline),
            "timeout": 300,
            "retryCount": 2, "sourceStatus": "pending", "error": error,
        ]
    }

    func sofort(poll: JSONValue = .null) -> JSONValue {
        [
            "id": "src_1", "object": "source_record", "type": "sofort", "flow": "redirect", "status": "pending",
            "usage": "single_use", "isReusable": false, "amount": 1099, "currency": "eur",
            "redirect": ["status": "pending", "url": "https://hooks.stripe.com/r/src_1", "returnURL": "myshop://done"],
            "poll": poll, "source": [:], "createdAt": "2025-01-02T03:04:05Z", "updatedAt": "2025-01-02T03:04:06Z",
        ]
    }

    @Test func oneSourceHidesItsSecretUnlessAsked() {
        let text = SourceRender.source(sofort(), clientSecret: "src_client_secret_abc", now: now, timeZone: utc)
        #expect(
            text == """
                source:        src_1
                type:          sofort
                flow:          redirect
                status:        pending
                usage:         single_use
                amount:        10.99 EUR
                redirect:      pending https://hooks.stripe.com/r/src_1
                return URL:    myshop://done
                client secret: [REDACTED] (--show-secrets shows it)
                created:       2025-01-02 03:04:05
                updated:       2025-01-02 03:04:06
                """)
        #expect(!text.contains("src_client_secret_abc"))
        let shown = SourceRender.source(
            sofort(), clientSecret: "src_client_secret_abc", showSecret: true, timeZone: utc)
        #expect(shown.contains("client secret: src_client_secret_abc"))
        // show and poll replies carry no secret: no row at all.
        #expect(!SourceRender.source(sofort(), timeZone: utc).contains("client secret"))
    }

    @Test func pollsInWords() {
        #expect(SourceRender.poll(poll("polling"), now: now) == "polling, 2 failed requests, 4m 12s left")
        #expect(
            SourceRender.poll(poll("paused", deadline: "2025-01-02T03:04:30Z"), now: now)
                == "paused (app in the background), 2 failed requests, 25s left")
        #expect(
            SourceRender.poll(poll("polling", deadline: "2025-01-02T03:04:00Z"), now: now).hasSuffix("deadline passed"))
        var finished = poll("finished")
        finished = finished.objectValue.map {
            var o = $0
            o["sourceStatus"] = "chargeable"
            return .object(o)
        }!
        #expect(SourceRender.poll(finished) == "finished: chargeable")
        let failed = poll("finished", error: ["code": 3003, "message": "Stripe is down"])
        #expect(SourceRender.poll(failed) == "finished with error 3003: Stripe is down")
        #expect(SourceRender.poll(poll("stopped")) == "stopped")
        #expect(
            SourceRender.source(sofort(poll: poll("polling")), now: now, timeZone: utc)
                .contains("poll:       polling, 2 failed requests, 4m 12s left"))
    }

    @Test func progressLineFitsEightyColumns() {
        let line = SourceRender.progress(sofort(poll: poll("polling")), now: now)
        #expect(line == "src_1  pending  polling  retries 2  4m 12s left")
        let long = "src_" + String(repeating: "A", count: 24)
        var source = sofort(poll: poll("polling")).objectValue!
        source["id"] = .string(long)
        #expect(SourceRender.progress(.object(source), now: now).count < 80)
        #expect(SourceRender.progress(sofort(), now: now) == "src_1  pending  no poll")
        #expect(SourceRender.progress(sofort(poll: poll("finished")), now: now) == "src_1  pending  finished")
    }

    @Test func whenAPollWaitEnds() {
        #expect(SourceRender.pollEnd(sofort(poll: poll("polling"))) == nil)
        #expect(SourceRender.pollEnd(sofort(poll: poll("paused"))) == nil)
        #expect(SourceRender.pollEnd(sofort(poll: poll("finished"))) == .succeeded)
        let error: JSONValue = ["code": 3002, "message": "No such source", "data": ["type": "invalid_request_error"]]
        #expect(
            SourceRender.pollEnd(sofort(poll: poll("finished", error: error)))
                == .failed(RPCError(code: 3002, message: "No such source", data: ["type": "invalid_request_error"])))
        guard case .ended(let stopped)? = SourceRender.pollEnd(sofort(poll: poll("stopped"))) else {
            Issue.record("a stopped poll ends the wait")
            return
        }
        #expect(stopped.contains("stopped"))
        guard case .ended(let none)? = SourceRender.pollEnd(sofort()) else {
            Issue.record("no poll ends the wait at once")
            return
        }
        #expect(none.contains("stpctl source poll src_1"))
    }

    @Test func amounts() {
        #expect(SourceRender.money(1099, currency: "eur") == "10.99 EUR")
        #expect(SourceRender.money(5, currency: "usd") == "0.05 USD")
        #expect(SourceRender.money(-250, currency: "eur") == "-2.50 EUR")
        #expect(SourceRender.money(500, currency: "jpy") == "500 JPY")
        #expect(SourceRender.money(100, currency: "") == "1.00")
        #expect(SourceRender.amount(["currency": "eur"]) == nil)
    }

    @Test func sourcesAreAnAlignedTable() {
        var chargeable = sofort(poll: poll("finished")).objectValue!
        chargeable["id"] = "src_Longer2"
        chargeable["status"] = "chargeable"
        #expect(
            SourceRender.sources([sofort(), .object(chargeable)], timeZone: utc) == """
                ID           TYPE    FLOW      STATUS      AMOUNT     POLL      UPDATED
                src_1        sofort  redirect  pending     10.99 EUR  -         2025-01-02 03:04:06
                src_Longer2  sofort  redirect  chargeable  10.99 EUR  finished  2025-01-02 03:04:06
                """)
        #expect(SourceRender.sources([]) == "no sources")
    }
}

@Suite struct WaitingTests {
    @Test func timesForProgressLines() {
        let now = Date(timeIntervalSince1970: 1000)
        #expect(Waiting.timeLeft(until: now.addingTimeInterval(41.2), now: now) == "42s left")
        #expect(Waiting.timeLeft(until: now.addingTimeInterval(252), now: now) == "4m 12s left")
        #expect(Waiting.timeLeft(until: now, now: now) == "deadline passed")
        #expect(Waiting.elapsed(12.9) == "12s")
        #expect(Waiting.elapsed(65) == "1m 5s")
        #expect(Waiting.date("2025-01-02T03:04:05.250Z") != nil)
        #expect(Waiting.date("yesterday") == nil)
    }

    @Test func linesAreCutToTheTerminal() {
        #expect(Waiting.fit("abcdef", columns: 5) == "abc…")
        #expect(Waiting.fit("abc", columns: 80) == "abc")
        #expect(Waiting.fit("abcdef", columns: 0) == "abcdef")  // width unknown: as it is
    }

    @Test func endsBecomeExitStatuses() throws {
        try WaitEnd.succeeded.check()
        let error = RPCError(code: 3003, message: "Stripe is down")
        #expect(throws: error) { try WaitEnd.failed(error).check() }
        #expect(throws: StpctlFailure.ended("cancelled")) { try WaitEnd.ended("cancelled").check() }
        #expect(StpctlFailure.ended("x").exitStatus == .daemonError)
        #expect(StpctlFailure.waitTimedOut("x").exitStatus == .timeout)
    }
}

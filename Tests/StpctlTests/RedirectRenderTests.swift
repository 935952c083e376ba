import Foundation
import JSONRPC
import StpctlKit
import Testing

@Suite struct RedirectRenderTests {
    let utc = TimeZone(identifier: "UTC")!

    func session(_ status: String, _ extra: [String: JSONValue] = [:]) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": "rdr_1", "object": "redirect_session", "status": .string(status), "kind": "source",
            "sourceId": "src_1", "redirectURL": "https://hooks.stripe.com/r/src_1", "returnURL": "myshop://done",
            "followUpTimeout": 10, "createdAt": "2025-01-02T03:04:05Z", "updatedAt": "2025-01-02T03:04:06Z",
        ]
        members.merge(extra) { _, new in new }
        return .object(members)
    }

    @Test func aStartedSessionLeadsWithTheURLToOpen() {
        let started = session(
            "inProgress", ["mode": "automatic", "opener": "app", "openURL": "https://hooks.stripe.com/r/src_1"])
        #expect(
            RedirectRender.session(started, timeZone: utc) == """
                open:           https://hooks.stripe.com/r/src_1
                session:        rdr_1
                status:         inProgress
                source:         src_1
                mode:           automatic, opened by the app
                redirect URL:   https://hooks.stripe.com/r/src_1
                return URL:     myshop://done
                follow-up poll: 10 s
                created:        2025-01-02 03:04:05
                updated:        2025-01-02 03:04:06
                """)
    }

    @Test func completionAndOutcome() {
        let done = session(
            "completed",
            [
                "mode": "browser", "openURL": "https://x",
                "completion": ["trigger": "url", "url": "myshop://done?source=src_1", "at": "2025-01-02T03:05:00Z"],
                "outcome": ["result": "chargeable", "at": "2025-01-02T03:05:01Z"],
            ])
        let text = RedirectRender.session(done, timeZone: utc)
        #expect(text.hasPrefix("session:"))
        #expect(text.contains("open:           https://x"))
        #expect(text.contains("completed:      by the return URL at 2025-01-02 03:05:00"))
        #expect(text.contains("outcome:        chargeable"))
        #expect(
            RedirectRender.completionLine(["trigger": "foreground", "at": "2025-01-02T03:05:00Z"], timeZone: utc)
                == "by app.foreground at 2025-01-02 03:05:00")
        #expect(
            RedirectRender.completionLine([
                "trigger": "error", "error": ["code": 4002, "message": "no app"], "at": "x",
            ])
                == "with error 4002: no app")
        let intent = session("notStarted", ["kind": "paymentIntent", "sourceId": .null, "paymentIntentId": "pi_1"])
        #expect(RedirectRender.session(intent, timeZone: utc).contains("payment intent: pi_1"))
        #expect(!RedirectRender.session(intent, timeZone: utc).contains("follow-up"))
    }

    @Test func whenARedirectWaitEnds() {
        #expect(RedirectRender.end(session("notStarted")) == nil)
        #expect(RedirectRender.end(session("inProgress")) == nil)
        #expect(RedirectRender.end(session("completed", ["completion": ["trigger": "url", "at": "x"]])) == nil)
        #expect(RedirectRender.end(session("completed", ["outcome": ["result": "failed", "at": "x"]])) == .succeeded)
        let error: JSONValue = ["code": 3006, "message": "Could not reach Stripe"]
        #expect(
            RedirectRender.end(session("completed", ["outcome": ["result": "error", "error": error, "at": "x"]]))
                == .failed(RPCError(code: 3006, message: "Could not reach Stripe")))
        let openFailed: JSONValue = ["code": 4002, "message": "The URL could not be opened"]
        #expect(
            RedirectRender.end(
                session("completed", ["completion": ["trigger": "error", "error": openFailed, "at": "x"]]))
                == .failed(RPCError(code: 4002, message: "The URL could not be opened")))
        guard case .ended(let message)? = RedirectRender.end(session("cancelled")) else {
            Issue.record("a cancelled session ends the wait")
            return
        }
        #expect(message.contains("cancelled"))
    }

    @Test func progressLines() {
        #expect(
            RedirectRender.progress(session("inProgress"), waited: 12.4)
                == "rdr_1  inProgress  waiting for the return URL  12s")
        #expect(
            RedirectRender.progress(session("completed"), waited: 61)
                == "rdr_1  completed  waiting for the outcome  1m 1s")
        #expect(RedirectRender.progress(session("cancelled"), waited: 0) == "rdr_1  cancelled  0s")
    }

    @Test func sessionsTableAndLifecycle() {
        let done = session("completed", ["mode": "inApp", "outcome": ["result": "chargeable", "at": "x"]])
        #expect(
            RedirectRender.sessions([session("notStarted"), done], timeZone: utc) == """
                ID     STATUS      KIND    OBJECT  MODE   OUTCOME     UPDATED
                rdr_1  notStarted  source  src_1   -      -           2025-01-02 03:04:06
                rdr_1  completed   source  src_1   inApp  chargeable  2025-01-02 03:04:06
                """)
        #expect(RedirectRender.sessions([]) == "no redirect sessions")
        #expect(
            RedirectRender.lifecycle(["completedRedirects": ["rdr_1", "rdr_2"], "polls": []], pollsVerb: "resumed")
                == """
                redirects completed: rdr_1, rdr_2
                polls resumed:       none
                """)
    }
}

import Foundation
import JSONRPC
import StpctlKit
import Testing

@Suite struct IntentRenderTests {
    let utc = TimeZone(identifier: "UTC")!

    @Test func aPendingRedirectLeadsWithTheResultThenTheURLToOpen() {
        let answer: JSONValue = [
            "paymentIntent": ["id": "pi_1", "status": "requires_action"], "result": "pending",
            "nextAction": ["type": "redirect_to_url", "kind": "redirect", "details": [:], "session": "rdr_1"],
            "redirect": ["id": "rdr_1", "status": "inProgress", "openURL": "https://hooks.stripe.com/3ds"],
        ]
        #expect(
            IntentRender.answer(answer, member: "paymentIntent", timeZone: utc) == """
                result:           pending
                open:             https://hooks.stripe.com/3ds
                intent:           pi_1
                status:           requires_action
                next action:      redirect_to_url (redirect)
                redirect session: rdr_1 (inProgress)
                """)
    }

    @Test func aVoucherShowsItsPageAndNumberAndAFailureItsError() {
        let voucher: JSONValue = [
            "setupIntent": ["id": "seti_1", "status": "requires_action"], "result": "succeeded",
            "nextAction": [
                "type": "oxxo_display_details", "kind": "display",
                "details": ["hosted_voucher_url": "https://v.test/1", "number": "1234"],
            ],
        ]
        #expect(
            IntentRender.answer(voucher, member: "setupIntent") == """
                result:      succeeded
                intent:      seti_1
                status:      requires_action
                next action: oxxo_display_details (display)
                page:        https://v.test/1
                number:      1234
                """)
        let failed: JSONValue = [
            "paymentIntent": ["id": "pi_2", "status": "requires_action"], "result": "failed",
            "error": ["code": 6011, "message": "This next action needs a return URL"], "nextAction": nil,
        ]
        #expect(
            IntentRender.answer(failed, member: "paymentIntent").hasPrefix(
                "result: failed\nerror:  error 6011: This next action needs a return URL"))
    }

    @Test func aPolledIntentAndTheirList() {
        let view: JSONValue = [
            "id": "pi_3", "status": "requires_action", "updatedAt": "2025-01-02T03:04:05Z",
            "nextAction": ["type": "blik_authorize", "kind": "awaitCustomer"],
            "poll": ["id": "ipoll_1", "status": "polling", "deadline": "2025-01-02T03:05:05Z"],
        ]
        #expect(
            IntentRender.intent(view, timeZone: utc) == """
                id:          pi_3
                status:      requires_action
                next action: blik_authorize (awaitCustomer)
                poll:        polling until 2025-01-02 03:05:05
                updated:     2025-01-02 03:04:05
                """)
        #expect(IntentRender.intents([]) == "no intents polled")
        #expect(IntentRender.intents([view], timeZone: utc).hasPrefix("ID    STATUS           NEXT ACTION"))
    }
}

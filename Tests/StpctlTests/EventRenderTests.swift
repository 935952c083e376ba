import Foundation
import JSONRPC
import StpctlKit
import Testing

@Suite struct EventRenderTests {
    let notification: JSONValue = [
        "subscription": "sub_1", "seq": 42, "type": "debug.test", "time": "2025-03-04T05:06:07Z", "objectId": "dbg_1",
        "object": ["id": "dbg_1", "object": "debug", "n": 3, "url": "https://x.test/a/b"],
    ]

    @Test func jsonLineListsTheEventMembersInOrderWithoutTheSubscription() {
        let expected =
            #"{"seq":42,"type":"debug.test","time":"2025-03-04T05:06:07Z","objectId":"dbg_1","#
            + #""object":{"id":"dbg_1","n":3,"object":"debug","url":"https://x.test/a/b"}}"#
        #expect(EventRender.jsonLine(notification) == expected)
    }

    @Test func jsonLineIsOneLineOfValidJSON() throws {
        var event = notification
        if case .object(var members) = event {
            members["object"] = ["text": "two\nlines \"quoted\" é"]
            event = .object(members)
        }
        let line = EventRender.jsonLine(event)
        #expect(!line.contains("\n"))
        let decoded = try JSONCoding.decode(JSONValue.self, from: Data(line.utf8))
        #expect(decoded["object"]?["text"] == "two\nlines \"quoted\" é")
        #expect(decoded["subscription"] == nil)
    }

    @Test func unknownMembersFollowSorted() {
        let event: JSONValue = ["seq": 1, "zeta": true, "alpha": 2, "type": "a.b"]
        #expect(EventRender.jsonLine(event) == #"{"seq":1,"type":"a.b","alpha":2,"zeta":true}"#)
    }

    @Test func humanLine() {
        #expect(
            EventRender.humanLine(notification, timeZone: TimeZone(identifier: "UTC")!)
                == "2025-03-04 05:06:07  #42  debug.test                dbg_1  url=https://x.test/a/b n=3")
    }

    @Test func humanLineInTheLocalTimeZone() {
        #expect(
            EventRender.localTime("2025-03-04T23:30:00Z", timeZone: TimeZone(secondsFromGMT: 3600)!)
                == "2025-03-05 00:30:00")
        #expect(
            EventRender.localTime("2025-03-04T23:30:00.250Z", timeZone: TimeZone(identifier: "UTC")!)
                == "2025-03-04 23:30:00")
        #expect(EventRender.localTime("yesterday") == "yesterday")
    }

    @Test func summaryPutsStatusFirstAndLeavesSecretsOut() {
        let object: JSONValue = [
            "id": "pc_1", "object": "payment_context", "status": "requires_action", "amount": 1250, "currency": "eur",
            "client_secret": "pi_1_secret_2", "ephemeralKey": "ek_3", "clientSecret": "x",
            "shipping": ["city": "Berlin"],
            "methods": ["card", "ideal"], "note": "two words", "cancelledAt": nil,
        ]
        #expect(
            EventRender.summarize(object, objectId: "pc_1")
                == #"status=requires_action amount=1250 currency=eur methods=[2] note="two words" shipping={…}"#)
    }

    @Test func summaryKeepsAnIdThatIsNotTheEventsObject() {
        #expect(EventRender.summarize(["id": "other"], objectId: "pc_1") == "id=other")
    }

    @Test func summaryIsCut() {
        let object: JSONValue = ["note": .string(String(repeating: "x", count: 300))]
        let summary = EventRender.summarize(object, limit: 20)
        #expect(summary.count == 20)
        #expect(summary.hasSuffix("…"))
    }

    @Test(arguments: ["client_secret", "clientSecret", "secret", "ephemeralKey", "api_key", "password"])
    func secretNames(name: String) {
        #expect(EventRender.isSecret(name))
    }

    @Test(arguments: ["status", "keys_count", "monkeys_count", "id"])
    func namesThatAreNotSecret(name: String) {
        #expect(!EventRender.isSecret(name))
    }
}

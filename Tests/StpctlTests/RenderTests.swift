import JSONRPC
import StpctlKit
import Testing

@Suite struct RenderTests {
    @Test func tableAlignsValues() {
        #expect(Render.table([("pid", "1"), ("state directory", "/x")]) == "pid:             1\nstate directory: /x")
    }

    @Test func errorWithoutData() {
        #expect(Render.error(RPCError(code: 1001, message: "No such object")) == "error 1001: No such object")
    }

    @Test func errorDataMembersAreListed() {
        let error = RPCError.invalidParams("unknown member", parameter: "a.b")
        #expect(Render.error(error) == "error -32602: Invalid params: a.b: unknown member\n  parameter: a.b")
        let nested = RPCError(code: 1003, message: "Not allowed", data: ["state": "closed", "allowed": ["open"]])
        #expect(Render.error(nested) == "error 1003: Not allowed\n  allowed: [\"open\"]\n  state:   closed")
    }

    @Test func errorDataThatIsNotAnObject() {
        #expect(Render.error(RPCError(code: 7, message: "m", data: 3)) == "error 7: m\n  data: 3")
    }

    @Test func jsonIsCompactWithSortedKeys() {
        #expect(Render.json(["b": 1, "a": "x/y"] as JSONValue, pretty: false) == #"{"a":"x/y","b":1}"#)
    }

    @Test(arguments: [
        (0.04, "0.0s"), (12.34, "12.3s"), (60, "1m 0s"), (3_725, "1h 2m 5s"), (90_061, "1d 1h 1m 1s"),
        (86_400, "1d 0h 0m 0s"),
    ])
    func durations(seconds: Double, text: String) {
        #expect(Render.duration(seconds) == text)
    }

    @Test func milliseconds() {
        #expect(Render.milliseconds(.microseconds(1_250)) == "1.25 ms")
    }

    @Test func methodListIsSortedWithSummaries() {
        let document: JSONValue = [
            "info": ["title": "stpd", "version": "1.2.3"],
            "methods": [["name": "z.b", "summary": "Last."], ["name": "a.long.name", "summary": "First."]],
        ]
        #expect(
            Render.methods(of: document) == """
                stpd protocol 1.2.3: 2 methods (stpctl describe METHOD tells more)
                  a.long.name  First.
                  z.b          Last.
                """)
    }
}

import Foundation
import JSONRPC
import Testing

// `Inbound.parse` classifies each frame by the JSON-RPC 2.0 rules before any method runs.
// Cases marked "spec" are the examples of https://www.jsonrpc.org/specification#examples.

private func parse(_ text: String) -> Inbound { Inbound.parse(Data(text.utf8)) }
private func parse(_ bytes: [UInt8]) -> Inbound { Inbound.parse(Data(bytes)) }

extension Inbound {
    var single: Entry? { if case .single(let entry) = self { entry } else { nil } }
    var batch: [Entry]? { if case .batch(let entries) = self { entries } else { nil } }
}

extension Inbound.Entry {
    var request: Request? { if case .call(let request) = self { request } else { nil } }
    var rejection: Response? { if case .invalid(let response) = self { response } else { nil } }
    /// The error code this entry is answered with; nil for a valid call.
    var errorCode: Int? {
        guard case .failure(let error)? = rejection?.outcome else { return nil }
        return error.code
    }
}

/// Asserts `inbound` is one rejected frame answered with `code` and `id`.
private func expectRejected(
    _ inbound: Inbound, code: Int, id: RequestID = .null, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let entry = inbound.single else {
        Issue.record("expected a single entry, got \(inbound)", sourceLocation: sourceLocation)
        return
    }
    #expect(entry.errorCode == code, "entry: \(entry)", sourceLocation: sourceLocation)
    #expect(entry.rejection?.id == id, sourceLocation: sourceLocation)
}

@Suite struct InboundSingleTests {
    @Test func requestWithParams() throws {
        let request = try #require(
            parse(#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#).single?.request)
        #expect(request == Request(id: 1, method: "subtract", params: [42, 23]))
        #expect(!request.isNotification)
    }

    @Test func requestWithNamedParams() throws {
        let request = try #require(
            parse(#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#)
                .single?.request)
        #expect(request.params == ["subtrahend": 23, "minuend": 42])
        #expect(request.id == 3)
    }

    @Test func requestWithoutParams() throws {
        let request = try #require(parse(#"{"jsonrpc":"2.0","method":"daemon.ping","id":"a"}"#).single?.request)
        #expect(request.params == nil)
        #expect(request.id == "a")
    }

    @Test func notificationHasNoID() throws {
        let request = try #require(
            parse(#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#).single?.request)
        #expect(request.isNotification)
        #expect(request.id == nil)
    }

    /// `"id": null` is a request (answered with id null), not a notification.
    @Test func nullIDIsARequest() throws {
        let request = try #require(parse(#"{"jsonrpc":"2.0","method":"m","id":null}"#).single?.request)
        #expect(request.id == .null)
        #expect(!request.isNotification)
    }

    @Test(arguments: [
        (#""abc""#, JSONValue.string("abc")),
        ("7", .int(7)),
        ("-3", .int(-3)),
        ("0", .int(0)),
        ("1.5", .double(1.5)),
    ])
    func acceptedIDTypes(raw: String, expected: JSONValue) throws {
        let request = try #require(parse(#"{"jsonrpc":"2.0","method":"m","id":\#(raw)}"#).single?.request)
        #expect(request.id == RequestID(expected))
        #expect(request.id?.json == raw, "the id keeps the text it was sent as")
    }

    /// An id of the wrong type cannot be echoed, so the error goes back with id null.
    @Test(arguments: ["{}", #"{"a":1}"#, "[]", "[1]", "true", "false"])
    func refusedIDTypes(raw: String) {
        expectRejected(parse(#"{"jsonrpc":"2.0","method":"m","id":\#(raw)}"#), code: -32600, id: .null)
    }

    @Test(arguments: [
        #"{"jsonrpc":"1.0","method":"m","id":5}"#,
        #"{"jsonrpc":2.0,"method":"m","id":5}"#,
        #"{"jsonrpc":"2","method":"m","id":5}"#,
        #"{"method":"m","id":5}"#,
        #"{"jsonrpc":null,"method":"m","id":5}"#,
    ])
    func wrongVersionKeepsTheID(frame: String) {
        expectRejected(parse(frame), code: -32600, id: 5)
    }

    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":"x"}"#,
        #"{"jsonrpc":"2.0","method":1,"id":"x"}"#,
        #"{"jsonrpc":"2.0","method":null,"id":"x"}"#,
        #"{"jsonrpc":"2.0","method":["m"],"id":"x"}"#,
        #"{"jsonrpc":"2.0","method":{"m":1},"id":"x"}"#,
    ])
    func missingOrNonStringMethodKeepsTheID(frame: String) {
        expectRejected(parse(frame), code: -32600, id: "x")
    }

    /// params, when present, must be an array or an object.
    @Test(arguments: [#""bar""#, "1", "true", "null", "2.5"])
    func nonStructuredParamsKeepTheID(raw: String) {
        expectRejected(parse(#"{"jsonrpc":"2.0","method":"m","params":\#(raw),"id":9}"#), code: -32600, id: 9)
    }

    /// spec: rpc call with invalid Request object.
    @Test func specInvalidRequestObject() {
        expectRejected(parse(#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#), code: -32600, id: .null)
    }

    /// A frame that is JSON but not an object (and not a batch) is an invalid request.
    @Test(arguments: ["1", #""text""#, "null", "true"])
    func scalarFrame(frame: String) {
        expectRejected(parse(frame), code: -32600)
    }
}

@Suite struct InboundParseErrorTests {
    /// spec: rpc call with invalid JSON.
    @Test func specInvalidJSON() {
        expectRejected(parse(#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#), code: -32700)
    }

    /// spec: rpc call Batch, invalid JSON.
    @Test func specInvalidBatchJSON() {
        expectRejected(
            parse(#"[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method""#),
            code: -32700)
    }

    @Test(arguments: [
        "",
        " ",
        "{",
        #"{"jsonrpc":"2.0","method":"m","id":1"#,
        #"{"jsonrpc":"2.0","method":"m","id":1} x"#,  // trailing garbage after the text
        #"{"jsonrpc":"2.0","method":"m","id":1}{"jsonrpc":"2.0","method":"m","id":2}"#,  // two texts on one line
        #"{'jsonrpc':'2.0','method':'m','id':1}"#,  // single quotes
        #"{jsonrpc:"2.0",method:"m",id:1}"#,  // unquoted keys
        #"{"jsonrpc":"2.0","method":"m","id":NaN}"#,
        #"{"jsonrpc":"2.0","method":"m","id":1} // comment"#,
    ])
    func invalidJSON(frame: String) {
        expectRejected(parse(frame), code: -32700)
    }

    /// Trailing commas are not JSON (RFC 8259), but Foundation's JSONDecoder accepts them, so
    /// `Inbound.parse` must not rely on it alone to reject them.
    @Test(arguments: [
        #"{"jsonrpc":"2.0","method":"m","id":1,}"#,
        #"{"jsonrpc":"2.0","method":"m","params":[1,2,],"id":1}"#,
        #"{"jsonrpc":"2.0","method":"m","params":{"a":1,},"id":1}"#,
        #"[{"jsonrpc":"2.0","method":"m","id":1},]"#,
    ])
    func trailingCommasAreNotJSON(frame: String) {
        expectRejected(parse(frame), code: -32700)
    }

    @Test(
        arguments: [
            [0xFF, 0xFE],
            [0xC0, 0x80],  // overlong NUL
            // A UTF-16 surrogate.
            Array(#"{"jsonrpc":"2.0","method":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#"","id":1}"#.utf8),
            Array(#"{"jsonrpc":"2.0","method":"m","id":""#.utf8) + [0xC3] + Array(#""}"#.utf8),  // truncated sequence
        ] as [[UInt8]])
    func invalidUTF8(bytes: [UInt8]) {
        expectRejected(parse(bytes), code: -32700)
    }

    @Test func binaryJunk() {
        // Every byte value but the newline that frames it, as a client gone wrong might send.
        expectRejected(parse((0...255).filter { $0 != 0x0A }.map(UInt8.init)), code: -32700)
        expectRejected(parse([0x00, 0x01, 0x02, 0x03, 0x7F]), code: -32700)
        expectRejected(parse([0x1F, 0x8B, 0x08, 0x00]), code: -32700)  // a gzip header
    }

    @Test func nestingAtTheLimitIsAccepted() throws {
        // The request object is level 1, so params may open maximumDepth - 1 more levels.
        let inner = Inbound.maximumDepth - 1
        let frame =
            #"{"jsonrpc":"2.0","method":"m","params":"# + String(repeating: "[", count: inner)
            + String(repeating: "]", count: inner) + #","id":1}"#
        let request = try #require(parse(frame).single?.request)
        #expect(request.id == 1)
    }

    @Test func nestingPastTheLimitIsAParseError() {
        let inner = Inbound.maximumDepth
        let frame =
            #"{"jsonrpc":"2.0","method":"m","params":"# + String(repeating: "[", count: inner)
            + String(repeating: "]", count: inner) + #","id":1}"#
        expectRejected(parse(frame), code: -32700)
        // Unbalanced and hostile: far deeper than any decoder should be asked to recurse.
        expectRejected(parse(String(repeating: "[", count: 100_000)), code: -32700)
        expectRejected(parse(String(repeating: #"{"a":"#, count: 10_000)), code: -32700)
    }

    @Test func bracketsInsideStringsDoNotCount() throws {
        let brackets = String(repeating: "[{", count: Inbound.maximumDepth * 2)
        let frame = #"{"jsonrpc":"2.0","method":"m","params":{"text":"\#(brackets)"},"id":1}"#
        let request = try #require(parse(frame).single?.request)
        #expect(request.params?["text"] == .string(brackets))
    }

    @Test func escapedQuotesAndBackslashesKeepTheStringOpen() throws {
        // `\"` does not end the string, so the brackets after it are still text.
        let brackets = String(repeating: "[", count: Inbound.maximumDepth + 1)
        let inside = #"{"jsonrpc":"2.0","method":"m","params":{"text":"a\"\#(brackets)"},"id":1}"#
        #expect(parse(inside).single?.request != nil)
        // `\\` is an escaped backslash: the quote after it does end the string, so real
        // nesting follows and is counted.
        let inner = Inbound.maximumDepth
        let outside =
            #"{"jsonrpc":"2.0","method":"m","params":{"text":"a\\","deep":"#
            + String(repeating: "[", count: inner) + String(repeating: "]", count: inner) + #"},"id":1}"#
        expectRejected(parse(outside), code: -32700)
    }
}

@Suite struct InboundBatchTests {
    /// spec: rpc call with an empty Array — a single error, not an empty batch reply.
    @Test func emptyBatch() {
        expectRejected(parse("[]"), code: -32600)
        expectRejected(parse(" [ ] "), code: -32600)
    }

    /// spec: rpc call with an invalid Batch (but not empty).
    @Test func batchOfOneNonObject() throws {
        let entries = try #require(parse("[1]").batch)
        #expect(entries.map(\.errorCode) == [-32600])
        #expect(entries[0].rejection?.id == .null)
    }

    /// spec: rpc call with invalid Batch.
    @Test func batchOfNonObjects() throws {
        let entries = try #require(parse("[1,2,3]").batch)
        #expect(entries.map(\.errorCode) == [-32600, -32600, -32600])
        #expect(entries.map { $0.rejection?.id } == [.null, .null, .null])
    }

    /// spec: rpc call Batch — calls, a notification, and an invalid member, in order.
    @Test func specMixedBatch() throws {
        let frame = """
            [
                {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
                {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
                {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
                {"foo": "boo"},
                {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
                {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
            ]
            """
        let entries = try #require(parse(frame).batch)
        try #require(entries.count == 6)
        #expect(entries[0].request == Request(id: "1", method: "sum", params: [1, 2, 4]))
        #expect(entries[1].request == Request(id: nil, method: "notify_hello", params: [7]))
        #expect(entries[2].request == Request(id: "2", method: "subtract", params: [42, 23]))
        #expect(entries[3].errorCode == -32600)
        #expect(entries[3].rejection?.id == .null)
        #expect(entries[4].request == Request(id: "5", method: "foo.get", params: ["name": "myself"]))
        #expect(entries[5].request == Request(id: "9", method: "get_data", params: nil))
    }

    /// spec: rpc call Batch (all notifications) — every entry a call without id.
    @Test func allNotificationBatch() throws {
        let entries = try #require(
            parse(
                #"""
                [{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
                 {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]
                """#
            ).batch)
        #expect(entries.count == 2)
        #expect(entries.allSatisfy { $0.request?.isNotification == true })
    }

    /// Members are judged one by one: a bad id in one does not spoil its neighbours.
    @Test func invalidMembersKeepTheirReadableIDs() throws {
        let entries = try #require(
            parse(
                #"""
                [{"jsonrpc":"2.0","method":"a","id":1},
                 {"jsonrpc":"2.0","method":"b","id":true},
                 {"jsonrpc":"1.0","method":"c","id":3},
                 {"jsonrpc":"2.0","method":"d","params":"x","id":4},
                 []]
                """#
            ).batch)
        #expect(entries.map(\.errorCode) == [nil, -32600, -32600, -32600, -32600])
        #expect(entries.map { $0.rejection?.id } == [nil, .null, 3, 4, .null])
    }
}

import Foundation
import JSONRPC
import StpdProtocol
import Testing

// JSON-RPC as exact as the specification asks: ids go back as they came, numbers and members
// that a JSONValue cannot hold faithfully are refused by name instead of changed, and every
// -32602 names the parameter.

private func request(_ text: String) -> Request? {
    guard case .single(.call(let request)) = Inbound.parse(Data(text.utf8)) else { return nil }
    return request
}

private func rejection(_ text: String) -> Response? {
    guard case .single(.invalid(let response)) = Inbound.parse(Data(text.utf8)) else { return nil }
    return response
}

private func text(_ response: Response) -> String {
    var out: [UInt8] = []
    response.write(to: &out)
    return String(decoding: out, as: UTF8.self)
}

private func errorOf(_ response: Response?) -> RPCError? {
    guard case .failure(let error)? = response?.outcome else { return nil }
    return error
}

@Suite struct ExactIDTests {
    /// Each of these changes in a round trip through Int64 or Double.
    @Test(arguments: [
        "9223372036854775808", "12345678901234567890123", "-0", "1e2", "1E+2", "0.10", "-9223372036854775809",
        "1e400", #""\u0041""#, #""a\/b""#, "1.0",
    ])
    func idIsEchoedByteForByte(raw: String) throws {
        let call = try #require(request(#"{"jsonrpc":"2.0","method":"m","id":\#(raw)}"#))
        let id = try #require(call.id)
        #expect(id.json == raw)
        #expect(text(Response(id: id, result: true)) == #"{"id":\#(raw),"jsonrpc":"2.0","result":true}"#)
    }

    @Test func invalidRequestsKeepTheirIDTextToo() throws {
        let response = try #require(rejection(#"{"jsonrpc":"1.0","method":"m","id":18446744073709551616}"#))
        #expect(response.id.json == "18446744073709551616")
    }

    @Test func idsInABatchKeepTheirText() throws {
        guard
            case .batch(let entries) = Inbound.parse(
                Data(#"[{"jsonrpc":"2.0","method":"m","id":-0},{"jsonrpc":"2.0","method":"m","id":1e2}]"#.utf8))
        else {
            Issue.record("not a batch")
            return
        }
        let ids = entries.map { entry -> String? in
            if case .call(let call) = entry { return call.id?.json }
            return nil
        }
        #expect(ids == ["-0", "1e2"])
    }

    @Test func aClientReadsTheExactIDBack() throws {
        let message = try ServerMessage.parse(Data(#"{"id":12345678901234567890123,"jsonrpc":"2.0","result":1}"#.utf8))
        guard case .response(let response) = message else {
            Issue.record("not a response")
            return
        }
        #expect(response.id.json == "12345678901234567890123")
    }
}

@Suite struct UnfaithfulParamsTests {
    private func router() -> MethodRouter<Void> {
        var router = MethodRouter<Void>(definitions: StpdAPI.schemas.mapValues(\.json))
        router.register(EventsWait.self) { _, _ in EventsWait.Result(events: [], next: 0, endedEarly: false) }
        router.register(DebugEmit.self) { _, _ in DebugEmit.Result(firstSeq: 1, lastSeq: 1) }
        return router
    }

    private func answer(_ frame: String) async -> RPCError? {
        guard let call = request(frame) else { return nil }
        return errorOf(await router().handle(call, context: ()))
    }

    @Test func numberBeyondDoubleIsInvalidParamsNamingIt() async throws {
        let error = try #require(
            await answer(#"{"jsonrpc":"2.0","method":"events.wait","id":1,"params":{"since":1e400}}"#))
        #expect(error.code == -32602)
        #expect(error.data?["parameter"] == "since")
        let nested = try #require(
            await answer(#"{"jsonrpc":"2.0","method":"debug.emit","id":1,"params":{"payload":{"a":[1,-1e999]}}}"#))
        #expect(nested.code == -32602)
        #expect(nested.data?["parameter"] == "payload.a[1]")
    }

    /// The number does not spoil its frame: the same frame's id is still echoed, and an unknown
    /// method is still an unknown method.
    @Test func outOfRangeNumberKeepsTheFrameReadable() async throws {
        let call = try #require(request(#"{"jsonrpc":"2.0","method":"nope","id":7,"params":{"x":1e400}}"#))
        let response = await router().handle(call, context: ())
        #expect(response?.id == 7)
        #expect(errorOf(response)?.code == -32601)
    }

    @Test func sinceOf2To64NamesTheParameter() async throws {
        let error = try #require(
            await answer(#"{"jsonrpc":"2.0","method":"events.wait","id":1,"params":{"since":18446744073709551616}}"#))
        #expect(error.code == -32602)
        #expect(error.data?["parameter"] == "since")
        #expect(!error.message.contains("DecodingError"), "\(error.message)")
    }

    @Test func duplicateParamsMemberIsInvalidParams() async throws {
        let error = try #require(
            await answer(#"{"jsonrpc":"2.0","method":"debug.emit","id":1,"params":{"count":1,"count":2}}"#))
        #expect(error.code == -32602)
        #expect(error.data?["parameter"] == "count")
        let nested = try #require(
            await answer(
                #"{"jsonrpc":"2.0","method":"events.wait","id":1,"params":{"since":0,"filter":{"types":[],"types":[]}}}"#
            ))
        #expect(nested.data?["parameter"] == "filter.types")
    }

    @Test func notificationWithBadParamsGetsNoReply() async {
        let call = request(#"{"jsonrpc":"2.0","method":"debug.emit","params":{"count":1,"count":2}}"#)
        #expect(call != nil)
        if let call { #expect(await router().handle(call, context: ()) == nil) }
    }
}

@Suite struct DuplicateEnvelopeTests {
    @Test(arguments: [
        #"{"jsonrpc":"2.0","jsonrpc":"1.0","method":"m","id":3}"#,
        #"{"jsonrpc":"2.0","method":"m","method":"n","id":3}"#,
        #"{"jsonrpc":"2.0","method":"m","params":{},"params":[],"id":3}"#,
    ])
    func duplicateEnvelopeMemberIsInvalidRequest(frame: String) throws {
        let response = try #require(rejection(frame))
        #expect(errorOf(response)?.code == -32600)
        #expect(response.id == 3)
    }

    @Test func twoIDsEchoNeither() throws {
        let response = try #require(rejection(#"{"jsonrpc":"2.0","method":"m","id":1,"id":2}"#))
        #expect(errorOf(response)?.code == -32600)
        #expect(response.id == .null)
    }
}

@Suite struct BatchLimitTests {
    @Test func batchOverTheLimitIsOneInvalidRequest() {
        let entry = #"{"jsonrpc":"2.0","method":"m","id":1}"#
        let frame = "[" + Array(repeating: entry, count: 11).joined(separator: ",") + "]"
        guard case .single(.invalid(let response)) = Inbound.parse(Data(frame.utf8), maximumBatch: 10) else {
            Issue.record("expected one rejection")
            return
        }
        #expect(errorOf(response)?.code == -32600)
        #expect(errorOf(response)?.data?["maxBatchRequests"] == 10)
        let atLimit = "[" + Array(repeating: entry, count: 10).joined(separator: ",") + "]"
        guard case .batch(let entries) = Inbound.parse(Data(atLimit.utf8), maximumBatch: 10) else {
            Issue.record("a batch at the limit is a batch")
            return
        }
        #expect(entries.count == 10)
    }
}

@Suite struct JSONTextTests {
    @Test(arguments: [
        "01", "-", "1.", ".5", "1e", "+1", "0x10", "\"\u{01}\"", #""\x""#, #""\ud800""#, #""\udc00x""#,
        #""\ud800\u0041""#, "[1 2]", #"{"a" 1}"#, "nul", "tru", "[", "\"abc",
    ])
    func notJSON(text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONText.parse(Array(text.utf8)) }
    }

    @Test func valuesReadAsTheirTypes() throws {
        let value = try JSONText.parse(
            Array(
                #" {"i":-9223372036854775808,"big":9223372036854775808,"d":0.5,"e":1e2,"s":"\u00e9\ud83d\ude00\n","n":null,"b":[true,false]} "#
                    .utf8))
        #expect(value["i"] == .int(.min))
        #expect(value["big"] == .double(9_223_372_036_854_775_808))
        #expect(value["d"] == 0.5)
        #expect(value["e"] == .int(100), "a whole number is an integer, however it is written")
        #expect(value["s"] == "é😀\n")
        #expect(value["n"] == .null)
        #expect(value["b"] == [true, false])
    }

    @Test func duplicatesAndHugeNumbersAreRefusedByName() {
        #expect(throws: JSONSyntaxError.self) { try JSONText.parse(Array(#"{"a":{"b":1,"b":2}}"#.utf8)) }
        #expect(throws: JSONSyntaxError.self) { try JSONText.parse(Array("[1e309]".utf8)) }
    }

    /// What the writer produces reads back as the same value, and looks like Foundation's output.
    @Test func writerRoundTrips() throws {
        let value: JSONValue = [
            "z": "quote \" backslash \\ slash / newline \n tab \t control \u{01} é 😀",
            "a": [1, -2, 0.25, 1e300, true, nil, [:], []], "m": ["b": 1, "a": 2],
        ]
        let bytes = JSONText.bytes(value)
        #expect(try JSONText.parse(bytes) == value)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(
            text.hasPrefix(
                #"{"a":[1,-2,0.25,1e+300,true,null,{},[]],"m":{"a":2,"b":1},"z":"quote \" backslash \\ slash / newline \n tab \t control \u0001"#
            ))
    }
}

/// `JSONCoding.value(of:)` and `typed(_:from:)` skip JSON text; they must agree with the round
/// trip through Foundation's coders that they replace.
@Suite struct JSONValueCoderTests {
    struct Sample: Codable, Equatable {
        enum Kind: String, Codable { case one, two }
        var name: String
        var count: Int
        var ratio: Double
        var whole: Double
        var kind: Kind
        var optional: String?
        var explicitNull: Int?
        var tags: [String]
        var nested: [String: [Int]]
        var date: Date
        var url: URL
        var data: Data
        var raw: JSONValue
        var big: UInt64
    }

    static let sample = Sample(
        name: "n", count: -3, ratio: 0.5, whole: 3, kind: .two, optional: nil, explicitNull: nil, tags: ["a", "b"],
        nested: ["x": [1, 2]], date: Date(timeIntervalSinceReferenceDate: 12.5),
        url: URL(string: "https://example.com/a?b=c")!, data: Data([1, 2, 3]), raw: ["k": [1, "v"]],
        big: 18_000_000_000_000_000_000)

    @Test func encodesAsFoundationsRoundTripDoes() throws {
        let viaText = try JSONCoding.decode(JSONValue.self, from: JSONCoding.encode(Self.sample))
        var direct = try JSONCoding.value(of: Self.sample)
        // Foundation writes UInt64 beyond Int64 exactly; a JSONValue holds it as a Double either way.
        #expect(direct["big"] == viaText["big"])
        #expect(direct == viaText)
        direct = try JSONCoding.value(of: [Self.sample])
        #expect(direct == .array([viaText]))
    }

    @Test func decodesWhatItEncodes() throws {
        #expect(try JSONCoding.typed(Sample.self, from: JSONCoding.value(of: Self.sample)) == Self.sample)
    }

    @Test func decodingErrorsCarryThePath() {
        var value = (try? JSONCoding.value(of: Self.sample)) ?? .null
        if case .object(var members) = value {
            members["nested"] = ["x": [1, "two"]]
            value = .object(members)
        }
        do {
            _ = try JSONCoding.typed(Sample.self, from: value)
            Issue.record("decoded a string as an Int")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["nested", "x", "1"])
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func nonFiniteNumbersAreRefused() {
        #expect(throws: EncodingError.self) { try JSONCoding.value(of: [Double.infinity]) }
    }
}

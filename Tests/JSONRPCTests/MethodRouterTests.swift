import JSONRPC
import StpdProtocol
import Testing

// The router is the contract's enforcement point: unknown methods, positional params and bad
// params are refused with the spec's codes before a handler runs, and whatever a handler throws
// is turned into the right error object.

/// A small method with a required string, an optional bounded integer and a nested array.
private enum Repeat: RPCMethod {
    struct Params: Codable, Sendable {
        var text: String
        var times: Int?
        var tags: [String]?
    }
    struct Result: Codable, Sendable, Equatable {
        var text: String
        var caller: String
    }
    static let name = "test.repeat"
    static let summary = "Repeats text."
    static let paramsSchema = JSONSchema.object(
        [
            "text": .string("What to repeat"),
            "times": .integer("How often", minimum: 1, maximum: 10),
            "tags": .array(of: .enumeration(["loud", "quiet"], "A tag")),
        ],
        required: ["text"])
    static let resultSchema = JSONSchema.object(["text": .string, "caller": .string], required: ["text", "caller"])
}

/// Its schema allows anything, so decoding is what refuses bad params.
private enum Loose: RPCMethod {
    struct Params: Codable, Sendable { var count: Int }
    typealias Result = Int
    static let name = "test.loose"
    static let summary = "Schema allows anything; Codable does not."
    static let paramsSchema = JSONSchema(["type": "object"])
    static let resultSchema = JSONSchema.integer
}

/// Throws whatever the test asks for.
private enum Fail: RPCMethod {
    struct Params: Codable, Sendable { var kind: String }
    typealias Result = Bool
    static let name = "test.fail"
    static let summary = "Throws."
    static let paramsSchema = JSONSchema.object(["kind": .string], required: ["kind"])
    static let resultSchema = JSONSchema.boolean
}

/// Its params use a named schema, resolved through the router's definitions.
private enum Charge: RPCMethod {
    struct Params: Codable, Sendable { var amount: [String: Int] }
    typealias Result = Bool
    static let name = "test.charge"
    static let summary = "Uses a named schema."
    static let paramsSchema = JSONSchema.object(["amount": .ref("Amount")], required: ["amount"])
    static let resultSchema = JSONSchema.boolean
}

private struct DomainError: RPCErrorConvertible {
    var rpcError: RPCError { StpdErrors.invalidState("canceled", data: ["state": "canceled"]) }
}

private struct PlainError: Error {}

/// The context is the caller's name, echoed in results to show it reaches handlers.
private func makeRouter() -> MethodRouter<String> {
    var router = MethodRouter<String>()
    router.register(Repeat.self) { params, caller in
        Repeat.Result(text: String(repeating: params.text, count: params.times ?? 1), caller: caller)
    }
    router.register(Loose.self) { params, _ in params.count }
    router.register(Fail.self) { params, _ in
        switch params.kind {
        case "rpc": throw StpdErrors.notFound("src_123", data: ["id": "src_123"])
        case "domain": throw DomainError()
        case "cancelled": throw CancellationError()
        default: throw PlainError()
        }
    }
    return router
}

private func call(_ method: String, _ params: JSONValue?, id: RequestID? = 1) async -> Response? {
    await makeRouter().handle(Request(id: id, method: method, params: params), context: "alice")
}

/// The error of a reply (nil for a success or no reply).
private func error(of response: Response?) -> RPCError? {
    guard case .failure(let error)? = response?.outcome else { return nil }
    return error
}

@Suite struct MethodRouterTests {
    @Test func registeredNames() {
        #expect(makeRouter().methodNames == ["test.repeat", "test.loose", "test.fail"])
    }

    @Test func resultIsEncodedAndIDEchoed() async throws {
        let response = try #require(await call("test.repeat", ["text": "ab", "times": 2], id: "req-7"))
        #expect(response.id == "req-7")
        #expect(response.outcome == .success(["text": "abab", "caller": "alice"]))
    }

    @Test func missingParamsMeanAnEmptyObject() async throws {
        // With no params the handler sees `{}`, so the required `text` is what is missing.
        let failure = try #require(error(of: await call("test.repeat", nil)))
        #expect(failure.code == -32602)
        #expect(failure.data == ["parameter": "text"])
    }

    @Test func nullIDGetsAReply() async throws {
        let response = try #require(await call("test.repeat", ["text": "x"], id: .null))
        #expect(response.id == .null)
    }

    @Test func unknownMethod() async throws {
        let response = try #require(await call("test.nope", ["text": "x"], id: 4))
        #expect(response.id == 4)
        let failure = try #require(error(of: response))
        #expect(failure.code == -32601)
        #expect(failure.data == ["method": "test.nope"])
    }

    @Test func paramsByPositionAreRefused() async throws {
        let failure = try #require(error(of: await call("test.repeat", ["ab", 2])))
        #expect(failure.code == -32602)
        #expect(failure.data?["parameter"] == "params")
    }

    @Test(
        arguments: [
            (["text": 5], "text"),
            (["times": 2], "text"),
            (["text": "a", "times": 0], "times"),
            (["text": "a", "times": 11], "times"),
            (["text": "a", "times": 1.5], "times"),
            (["text": "a", "tmies": 2], "tmies"),
            (["text": "a", "tags": ["loud", "shouty"]], "tags[1]"),
        ] as [(JSONValue, String)])
    func badParamsNameTheParameter(params: JSONValue, parameter: String) async throws {
        let failure = try #require(error(of: await call("test.repeat", params)))
        #expect(failure.code == -32602)
        #expect(failure.data == ["parameter": .string(parameter)])
        #expect(failure.message.contains(parameter))
    }

    /// The schema let them through; decoding names the member all the same, not Swift's error text.
    @Test func paramsThatDoNotDecodeAreInvalidParams() async throws {
        let failure = try #require(error(of: await call("test.loose", ["count": "three"])))
        #expect(failure.code == -32602)
        #expect(failure.data?["parameter"] == "count")
        #expect(!failure.message.contains("DecodingError"), "\(failure.message)")
        let missing = try #require(error(of: await call("test.loose", [:])))
        #expect(missing.data?["parameter"] == "count")
        #expect(error(of: await call("test.loose", ["count": 3])) == nil)
    }

    @Test func noParamsMethodRefusesAnyMember() async throws {
        var router = MethodRouter<String>()
        router.register(Ping.self) { _, _ in Ping.Result(version: "1") }
        let ok = await router.handle(Request(id: 1, method: Ping.name, params: [:]), context: "")
        #expect(ok?.outcome == .success(["pong": true, "version": "1"]))
        let bad = await router.handle(Request(id: 1, method: Ping.name, params: ["verbose": true]), context: "")
        #expect(error(of: bad)?.code == -32602)
        #expect(error(of: bad)?.data == ["parameter": "verbose"])
    }

    @Test func thrownRPCErrorPassesThrough() async throws {
        let failure = try #require(error(of: await call("test.fail", ["kind": "rpc"])))
        #expect(failure == StpdErrors.notFound("src_123", data: ["id": "src_123"]))
        #expect(failure.code == 1001)
    }

    @Test func convertibleErrorUsesItsRPCForm() async throws {
        let failure = try #require(error(of: await call("test.fail", ["kind": "domain"])))
        #expect(failure.code == StpdErrors.invalidState.code)
        #expect(failure.data == ["state": "canceled"])
    }

    /// Its client reads "Internal error" and nothing more (a store's error may quote its SQL); the
    /// detail goes to the daemon's log, from `logDetail`, which never reaches the wire.
    @Test func otherErrorsAreInternalErrorsThatQuoteNothing() async throws {
        let response = try #require(await call("test.fail", ["kind": "plain"]))
        let failure = try #require(error(of: response))
        #expect(failure.code == -32603)
        #expect(failure.message == "Internal error")
        #expect(failure.data == nil)
        #expect(failure.logDetail == String(describing: PlainError()))
        #expect(!failure.isCancellation)
        var bytes: [UInt8] = []
        response.write(to: &bytes)
        let wire = String(decoding: bytes, as: UTF8.self)
        #expect(wire == #"{"error":{"code":-32603,"message":"Internal error"},"id":1,"jsonrpc":"2.0"}"#)
    }

    /// Work cancelled (its connection closed, its subscriber dropped) is told apart, so the daemon
    /// logs it at debug rather than as a failure.
    @Test func cancelledWorkIsACancellationNotAFailure() async throws {
        let failure = try #require(error(of: await call("test.fail", ["kind": "cancelled"])))
        #expect(failure.code == -32603 && failure.message == "Internal error")
        #expect(failure.isCancellation)
    }

    /// A notification is never answered, not even with an error.
    @Test func notificationsGetNoReply() async {
        #expect(await call("test.repeat", ["text": "x"], id: nil) == nil)
        #expect(await call("test.nope", nil, id: nil) == nil)
        #expect(await call("test.repeat", ["times": 99], id: nil) == nil)
        #expect(await call("test.repeat", ["x"], id: nil) == nil)
        #expect(await call("test.fail", ["kind": "plain"], id: nil) == nil)
    }

    @Test func refsInParamsResolveThroughTheRouterDefinitions() async throws {
        var router = MethodRouter<String>(definitions: [
            "Amount": JSONSchema.object(["value": .integer("v", minimum: 1)], required: ["value"]).json
        ])
        router.register(Charge.self) { _, _ in true }
        let ok = await router.handle(
            Request(id: 1, method: "test.charge", params: ["amount": ["value": 5]]), context: "")
        #expect(ok?.outcome == .success(true))
        let bad = await router.handle(
            Request(id: 1, method: "test.charge", params: ["amount": ["value": 0]]), context: "")
        #expect(error(of: bad)?.data == ["parameter": "amount.value"])
    }
}

/// `route` does everything but a handler's body synchronously, so a server can answer unknown
/// methods, bad params and constant methods where it reads the request.
@Suite struct RoutingTests {
    private func router() throws -> MethodRouter<String> {
        var router = MethodRouter<String>()
        router.register(Repeat.self) { params, caller in .init(text: params.text, caller: caller) }
        try router.registerConstant(Ping.self, result: Ping.Result(version: "9"))
        try router.registerConstant(Fail.self, result: true, immediate: false)
        return router
    }

    private func answered(_ routed: RoutedCall) -> Response?? {
        if case .answered(let response) = routed { return .some(response) }
        return nil
    }

    @Test func whatIsAnsweredWhereTheRequestIsRead() throws {
        let router = try router()
        let ping = answered(router.route(Request(id: 1, method: "daemon.ping", params: nil), context: ""))
        #expect(ping??.outcome == .success(["pong": true, "version": "9"]))
        let unknown = answered(router.route(Request(id: 3, method: "nope", params: nil), context: ""))
        #expect(error(of: unknown ?? nil)?.code == -32601)
        let bad = answered(router.route(Request(id: 4, method: "test.repeat", params: ["times": 2]), context: ""))
        #expect(error(of: bad ?? nil)?.data == ["parameter": "text"])
    }

    @Test func whatRunsLater() async throws {
        let router = try router()
        guard
            case .pending(let run) = router.route(
                Request(id: 5, method: "test.repeat", params: ["text": "a"]), context: "c")
        else {
            Issue.record("a regular handler runs later")
            return
        }
        #expect(await run()?.outcome == .success(["text": "a", "caller": "c"]))
        guard
            case .pending(let constant) = router.route(
                Request(id: 6, method: "test.fail", params: ["kind": "x"]), context: "")
        else {
            Issue.record("a constant that is not immediate is written by a task")
            return
        }
        #expect(await constant()?.outcome == .success(true))
    }
}

/// Issue 24.1: with `maxStringBytes`, no string anywhere in the params (a declared one, one inside
/// free-form JSON, a member name) is longer, and the error names where it is.
@Suite struct StringBytesTests {
    private func answer(_ method: String, _ params: JSONValue) async -> RPCError? {
        var router = MethodRouter<String>(maxStringBytes: 8)
        router.register(Repeat.self) { params, caller in Repeat.Result(text: params.text, caller: caller) }
        router.register(Loose.self) { params, _ in params.count }
        return error(of: await router.handle(Request(id: 1, method: method, params: params), context: "alice"))
    }

    @Test func aLongStringIsRefusedNamingItsParameterAndTheBound() async throws {
        #expect(await answer("test.repeat", ["text": "12345678"]) == nil, "at the bound is accepted")
        let failure = try #require(await answer("test.repeat", ["text": "123456789"]))
        #expect(failure.code == -32602)
        #expect(failure.data == ["parameter": "text", "maxBytes": 8])
        #expect(failure.message.contains("is 9 bytes long"))
        // Bytes, not characters: four two-byte letters are eight bytes.
        #expect(await answer("test.repeat", ["text": "éééé"]) == nil)
        #expect(await answer("test.repeat", ["text": "ééééé"])?.data?["parameter"] == "text")
    }

    @Test func stringsInFreeFormJSONAndMemberNamesAreBoundedToo() async throws {
        let nested = try #require(await answer("test.loose", ["count": 1, "extra": ["a": ["123456789"]]]))
        #expect(nested.data?["parameter"] == "extra.a[0]")
        let name = try #require(await answer("test.loose", ["count": 1, "extra": ["123456789": 1]]))
        #expect(name.data?["parameter"] == "extra" && !name.message.contains("123456789"))
    }
}

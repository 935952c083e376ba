// The hot paths of a request and of an event, one benchmark each, on today's public APIs of
// JSONRPC, StpdProtocol and StpdCore (`make bench-micro`). When a change moves a path (a new
// framer, an event encoded once for all subscribers), its benchmark here moves with it, so that
// before/after figures stay comparable.
//
// Each "x1000" benchmark runs its body 1,000 times per iteration (scalingFactor .kilo); the
// metrics package-benchmark marks with `*` are divided by that factor, so they read per call.
// Fixed inputs (URL indexes, parsed params) are built once, outside the measurement.
import Benchmark
import Foundation
import JSONRPC
import NIOCore
import NIOEmbedded
import NIOExtras
import StpdCore
@_spi(Testing) import StpdProtocol
import StpdStore

let pingLine = #"{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}"#
let sourceCreateLine =
    #"{"jsonrpc":"2.0","id":7,"method":"source.create","params":{"params":{"sofort":{"amount":1099,"#
    + #""returnURL":"benchshop://return?order=42","country":"DE"}}}}"#

/// An event's object as redirect events carry it: a session's full state (about 700 bytes).
let sessionObject: JSONValue = [
    "object": "redirect_session", "id": "rdr_1NbV2c4g5xYzAbCdEfGhIjKl", "kind": "source", "status": "inProgress",
    "sourceId": "src_1NbV2c4g5xYzAbCdEfGhIjKl", "paymentIntentId": nil, "mode": "automatic", "opener": "app",
    "returnURL": "benchshop://return?order=42",
    "redirectURL":
        "https://hooks.stripe.com/redirect/authenticate/src_1NbV2c4g5xYzAbCdEfGhIjKl?client_secret=src_client_secret_abc",
    "openURL":
        "https://hooks.stripe.com/redirect/authenticate/src_1NbV2c4g5xYzAbCdEfGhIjKl?client_secret=src_client_secret_abc",
    "nativeURL": nil, "followUpTimeout": 10, "createdAt": "2026-11-21T13:35:54Z", "completion": nil, "outcome": nil,
]

func bytes(_ text: String) -> Data { Data(text.utf8) }

func request(_ line: String) -> Request {
    guard case .single(.call(let request)) = Inbound.parse(bytes(line)) else { fatalError("not a request: \(line)") }
    return request
}

/// Today's event notification, as the daemon frames it for one subscriber.
func eventFrame(_ record: EventRecord, subscription: String) throws -> Data {
    let params = Notifications.EventParams(subscription: subscription, record: record)
    let notification = Request(id: nil, method: Notifications.event.method, params: try JSONCoding.value(of: params))
    var data = try JSONCoding.encode(notification)
    data.append(UInt8(ascii: "\n"))
    return data
}

/// A router like the daemon's (same schema definitions), with stub handlers: what dispatch,
/// validation and decoding cost, without the work of any method. The source.create stub ends
/// with an error (its real result needs Stripe), which the router turns into an error reply.
func makeRouter() -> MethodRouter<Void> {
    var router = MethodRouter<Void>(definitions: StpdAPI.schemas.mapValues(\.json))
    router.register(Ping.self) { _, _ in Ping.Result(version: StpdAPI.version) }
    router.register(SourceCreate.self) { params, _ in
        blackHole(params)
        throw RPCError.internalError("stub")
    }
    return router
}

// -- the return-URL lookup ----------------------------------------------------------------------

func returnURL(_ order: Int) -> ReturnURL {
    guard let url = ReturnURL("benchshop://return?order=\(order)&redirect_merchant_name=Shop") else {
        fatalError("unparseable return URL")
    }
    return url
}

/// A SQLite store with SESSIONS started sessions filed under their return URL's key (the SDK's
/// usual shape: each with its own URL), as `redirect.start` files them, 10 owners.
func filedStore(_ sessions: Int) async throws -> SQLiteStateStore {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let store = try SQLiteStateStore(path: directory.appendingPathComponent("stpd.sqlite").path)
    let now = Date()
    for start in stride(from: 0, to: sessions, by: 1000) {
        let changes = (start..<min(start + 1000, sessions)).map { n in
            StateChange(
                object: StoredObject(
                    id: "rdr_\(n)", kind: "redirect", ownerUID: UInt32(1000 + n % 10), state: [:], createdAt: now,
                    updatedAt: now, status: "inProgress"),
                eventType: EventType(testing: "redirect.started"), precondition: .absent,
                keys: [returnURL(n).filingKeys[0]])
        }
        _ = try await store.apply(changes, at: now)
    }
    return store
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput], warmupIterations: 3, scalingFactor: .kilo,
        maxDuration: .seconds(2), maxIterations: 10_000)

    // -- a request's way in ------------------------------------------------------------------------

    // One channel per iteration: 100 reads of 64 pipelined pings each (6,400 frames).
    Benchmark("frame split x6400: 64 pings per read (LineBasedFrameDecoder)", configuration: .init(scalingFactor: .one))
    { benchmark in
        let chunk = ByteBuffer(string: String(repeating: pingLine + "\n", count: 64))
        for _ in benchmark.scaledIterations {
            let channel = EmbeddedChannel(handler: ByteToMessageHandler(LineBasedFrameDecoder()))
            for _ in 0..<100 {
                try? channel.writeInbound(chunk)
                while let frame = try? channel.readInbound(as: ByteBuffer.self) { blackHole(frame) }
            }
            _ = try? channel.finish()
        }
    }

    Benchmark("frame parse x1000: daemon.ping (Inbound.parse)") { benchmark in
        let frame = bytes(pingLine)
        for _ in benchmark.scaledIterations { blackHole(Inbound.parse(frame)) }
    }

    Benchmark("frame parse x1000: source.create sofort (Inbound.parse)") { benchmark in
        let frame = bytes(sourceCreateLine)
        for _ in benchmark.scaledIterations { blackHole(Inbound.parse(frame)) }
    }

    Benchmark("request decode + schema validation x1000: source.create params") { benchmark in
        let validator = SchemaValidator(definitions: StpdAPI.schemas.mapValues(\.json))
        let params = request(sourceCreateLine).params ?? .null
        for _ in benchmark.scaledIterations {
            try? validator.validate(params, against: SourceCreate.paramsSchema)
            blackHole(try? JSONCoding.typed(SourceCreate.Params.self, from: params))
        }
    }

    // -- dispatch ----------------------------------------------------------------------------------

    Benchmark("router dispatch x1000: daemon.ping") { benchmark async in
        let router = makeRouter()
        let ping = request(pingLine)
        for _ in benchmark.scaledIterations { blackHole(await router.handle(ping, context: ())) }
    }

    Benchmark("router dispatch x1000: source.create (validate, decode, stub error)") { benchmark async in
        let router = makeRouter()
        let create = request(sourceCreateLine)
        for _ in benchmark.scaledIterations { blackHole(await router.handle(create, context: ())) }
    }

    // -- a reply's and an event's way out ------------------------------------------------------------

    Benchmark("response encode x1000: daemon.ping") { benchmark in
        let result = (try? JSONCoding.value(of: Ping.Result(version: StpdAPI.version))) ?? .null
        for _ in benchmark.scaledIterations {
            var data = (try? JSONCoding.encode(Response(id: 1, result: result))) ?? Data()
            data.append(UInt8(ascii: "\n"))
            blackHole(data)
        }
    }

    Benchmark("response encode x1000: a redirect session") { benchmark in
        for _ in benchmark.scaledIterations {
            var data = (try? JSONCoding.encode(Response(id: 1, result: sessionObject))) ?? Data()
            data.append(UInt8(ascii: "\n"))
            blackHole(data)
        }
    }

    Benchmark("event encode x1000: one redirect event for one subscriber") { benchmark in
        let record = EventRecord(
            seq: 42, type: "redirect.started", time: "2026-11-21T13:35:54Z", objectId: "rdr_1", object: sessionObject)
        for _ in benchmark.scaledIterations { blackHole(try? eventFrame(record, subscription: "sub_1")) }
    }

    // -- handle-url ----------------------------------------------------------------------------------

    // The lookup handle-url makes in the store: every key the incoming URL could be filed under.
    // Built once per size, before any measurement; incoming URLs are parsed up front.
    for sessions in [100, 10_000, 100_000] {
        let incoming = (0..<64).map { returnURL(($0 * 7919) % sessions).candidateKeys }
        Benchmark("return-URL lookup: \(sessions) sessions, distinct URLs", configuration: .init(scalingFactor: .one)) {
            benchmark async in
            guard let store = try? await filedStore(sessions) else { return }
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations {
                for key in incoming[i % incoming.count] {
                    blackHole(try? await store.lookup(key: key, owner: nil, after: nil, limit: 32))
                }
            }
        }
    }
}

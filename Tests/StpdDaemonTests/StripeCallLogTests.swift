import Foundation
import JSONRPC
import Logging
import StpdProtocol
import StripeAPI
import Synchronization
import Testing

@testable import StpdDaemon

/// Keeps every record logged through it.
final class CapturedLogs: Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
        /// Everything of the record as text, to search for what must never be there.
        var text: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }
    let records = Mutex<[Record]>([])
    var all: [Record] { records.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(logs: self) }
    }

    struct Handler: LogHandler {
        let logs: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }.mapValues { "\($0)" }
            logs.records.withLock {
                $0.append(Record(level: event.level, message: "\(event.message)", metadata: merged))
            }
        }
    }
}

/// Answers each request with the next response, the last one for ever.
private final class Replies: StripeHTTPTransport {
    private let queue: Mutex<[HTTPResponseData]>
    init(_ responses: [HTTPResponseData]) { queue = Mutex(responses) }
    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        queue.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
    }
}

private func reply(_ status: Int, _ body: String, requestID: String) -> HTTPResponseData {
    HTTPResponseData(status: status, headers: ["Request-Id": requestID], body: Data(body.utf8))
}

@Suite struct StripeCallLogTests {
    let secretKey = "sk_test_51AbCdEfGhIjKlMnOp"
    let clientSecret = "pi_3Nx9AbC_secret_QrStUvWxYz"

    private func client(_ transport: Replies, logs: CapturedLogs, metrics: StpdMetrics) -> StripeClient {
        var client = StripeClient(
            configuration: StripeConfiguration(
                key: StripeKey(secretKey)!, userAgent: StripeUserAgent(bindingsVersion: StpdAPI.version)),
            transport: transport, sleep: { _ in }, random: { 0 }, makeIdempotencyKey: { "idem-7" })
        client.observer = StripeCallLog.observer(logger: logs.logger, metrics: metrics)
        return client
    }

    @Test func everyCallIsLoggedWithItsFieldsAndNoSecret() async throws {
        let logs = CapturedLogs()
        let metrics = StpdMetrics()
        let transport = Replies([
            reply(
                200, #"{"id":"pi_3Nx9AbC","object":"payment_intent","client_secret":"\#(clientSecret)"}"#,
                requestID: "req_ok1"),
            reply(
                402, #"{"error":{"type":"card_error","code":"card_declined","message":"Your card was declined."}}"#,
                requestID: "req_no2"),
        ])
        let c = client(transport, logs: logs, metrics: metrics)
        _ = try await c.send(
            StripeRequest(
                .get, "/v1/payment_intents/pi_3Nx9AbC",
                params: ["client_secret": .string(clientSecret)], key: StripeKey("pk_test_51PubLiShAbLe")))
        _ = try? await c.send(
            StripeRequest(
                .post, "/v1/payment_intents/pi_3Nx9AbC/confirm",
                params: ["client_secret": .string(clientSecret), "payment_method": "pm_card_visa"]))

        let records = logs.all
        #expect(records.count == 2)
        let (ok, declined) = (records[0], records[1])
        #expect(ok.level == .info)
        #expect(ok.metadata["method"] == "GET")
        #expect(ok.metadata["path"] == "/v1/payment_intents/pi_3Nx9AbC")
        #expect(ok.metadata["status"] == "200")
        #expect(ok.metadata["request_id"] == "req_ok1")
        #expect(ok.metadata["attempt"] == "1")
        #expect(ok.metadata["latency_ms"] != nil)
        #expect(ok.metadata["idempotency_key"] == nil)  // a GET has none
        // A failed call is a warning, with the same fields.
        #expect(declined.level == .warning)
        #expect(declined.metadata["status"] == "402")
        #expect(declined.metadata["request_id"] == "req_no2")
        #expect(declined.metadata["idempotency_key"] == "idem-7")
        #expect(declined.message.contains("failed"))
        for record in records {
            for secret in [
                secretKey, "sk_test_", "pk_test_", clientSecret, "_secret_", "client_secret", "pm_card_visa",
            ] {
                #expect(!record.text.contains(secret), "\(secret) logged: \(record.text)")
            }
        }
        let text = metrics.text(
            .init(connections: 0, subscribers: 0, pollsRunning: 0, storeSizeBytes: 0, redirectSessions: [:]))
        #expect(
            text.contains(
                #"stpd_stripe_requests_total{endpoint="GET /v1/payment_intents/{id}",status="200",attempt="1"} 1"#))
        #expect(
            text.contains(
                #"stpd_stripe_requests_total{endpoint="POST /v1/payment_intents/{id}/confirm",status="402",attempt="1"} 1"#
            ))
    }

    @Test func aConnectionFailureIsAWarningNamingNoSecret() async throws {
        struct Refused: StripeHTTPTransport {
            struct Failure: Error, CustomStringConvertible {
                var description: String {
                    "refused: https://api.stripe.com/v1/sources/src_1?client_secret=src_client_secret_abc"
                }
            }
            func send(_ request: HTTPRequestData) async throws -> HTTPResponseData { throw Failure() }
        }
        let logs = CapturedLogs()
        var policy = RetryPolicy()
        policy.maxTransientRetries = 1
        var c = StripeClient(
            configuration: StripeConfiguration(
                key: StripeKey(secretKey)!, userAgent: StripeUserAgent(bindingsVersion: StpdAPI.version)),
            transport: Refused(), retryPolicy: policy, sleep: { _ in }, random: { 0 })
        c.observer = StripeCallLog.observer(logger: logs.logger, metrics: StpdMetrics())
        _ = try? await c.send(StripeRequest(.get, "/v1/sources/src_1"))
        let records = logs.all
        #expect(records.map(\.level) == [.warning, .warning])
        #expect(records.map { $0.metadata["attempt"] } == ["1", "2"])
        #expect(records.map { $0.metadata["status"] } == ["none", "none"])
        #expect(records.map { $0.metadata["will_retry"] } == ["1", "0"])
        #expect(records.allSatisfy { !$0.text.contains("src_client_secret_abc") && $0.text.contains("refused") })
    }
}

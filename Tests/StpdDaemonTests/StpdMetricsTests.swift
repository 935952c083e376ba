import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdDaemon

/// The instruments behind `daemon.metrics` and the text they give; the daemon's own counts are
/// checked end to end in Tests/e2e/test_metrics.py.
@Suite struct StpdMetricsTests {
    let idle = StpdMetrics.Snapshot(
        connections: 0, subscribers: 0, pollsRunning: 0, storeSizeBytes: 0, redirectSessions: [:])

    @Test func requestsCountByMethodAndOutcomeWithTheirLatency() {
        let metrics = StpdMetrics()
        metrics.request(method: Ping.name, error: nil, duration: .microseconds(80))
        metrics.request(method: Ping.name, error: nil, duration: .microseconds(90))
        metrics.request(
            method: SourceGet.name, error: .invalidParams("bad", parameter: "id"), duration: .milliseconds(1))
        let text = metrics.text(idle)
        #expect(text.contains(#"stpd_requests_total{method="daemon.ping",outcome="ok"} 2"#))
        #expect(text.contains(#"stpd_requests_total{method="source.get",outcome="-32602"} 1"#))
        #expect(text.contains(#"stpd_requests_total{method="source.get",outcome="ok"} 0"#))
        #expect(text.contains(#"stpd_request_duration_seconds_count{method="daemon.ping"} 2"#))
        #expect(text.contains(#"stpd_request_duration_seconds_bucket{method="daemon.ping",le="0.0001"} 2"#))
        #expect(text.contains("# TYPE stpd_request_duration_seconds histogram"))
    }

    /// The instruments of a Stripe endpoint are made once and counted on after (they are cached).
    @Test func stripeAttemptsCountPerEndpointStatusAndAttempt() {
        let metrics = StpdMetrics()
        func attempt(_ path: String, status: Int?, attempt: Int = 1) -> StripeAttempt {
            StripeAttempt(
                method: "GET", path: path, status: status, requestID: nil, latency: .milliseconds(3),
                attempt: attempt, idempotencyKey: nil, willRetry: false)
        }
        for id in ["pi_1", "pi_2", "pi_3"] { metrics.stripeAttempt(attempt("/v1/payment_intents/\(id)", status: 200)) }
        metrics.stripeAttempt(attempt("/v1/payment_intents/pi_4", status: nil, attempt: 2))
        let text = metrics.text(idle)
        #expect(
            text.contains(
                #"stpd_stripe_requests_total{endpoint="GET /v1/payment_intents/{id}",status="200",attempt="1"} 3"#))
        #expect(
            text.contains(
                #"stpd_stripe_requests_total{endpoint="GET /v1/payment_intents/{id}",status="none",attempt="2"} 1"#))
        #expect(
            text.contains(#"stpd_stripe_request_duration_seconds_count{endpoint="GET /v1/payment_intents/{id}"} 4"#))
    }

    /// A name the client made up is never a label: the series stay those of the declared methods.
    @Test func anUndeclaredMethodCountsAsUnknown() {
        let metrics = StpdMetrics()
        for n in 0..<50 {
            metrics.request(method: "made.up\(n)", error: .methodNotFound("made.up\(n)"), duration: .microseconds(5))
        }
        let text = metrics.text(idle)
        #expect(!text.contains("made.up"))
        #expect(text.contains(#"stpd_requests_total{method="(unknown)",outcome="-32601"} 50"#))
        let methods = Set(StpdAPI.methods.map { $0.name } + ["(unknown)"])
        let labelled = text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("stpd_requests_total{method=\"") else { return nil }
            return String(line.dropFirst("stpd_requests_total{method=\"".count).prefix { $0 != "\"" })
        }
        #expect(Set(labelled) == methods)
    }

    @Test func gaugesTakeTheSnapshotAndCountersMove() {
        let metrics = StpdMetrics()
        metrics.eventsAppended.increment(by: 3)
        metrics.subscriberDropped(.slowConsumer)
        let snapshot = StpdMetrics.Snapshot(
            connections: 2, subscribers: 1, pollsRunning: 4, storeSizeBytes: 8192,
            redirectSessions: [.inProgress: 3, .completed: 1])
        let text = metrics.text(snapshot)
        for line in [
            "stpd_events_appended_total 3", "stpd_connections 2.0", "stpd_subscribers 1.0", "stpd_polls_running 4.0",
            "stpd_store_size_bytes 8192.0", #"stpd_subscribers_dropped_total{reason="slow-consumer"} 1"#,
            #"stpd_subscribers_dropped_total{reason="retention"} 0"#,
            #"stpd_redirect_sessions{status="inProgress"} 3.0"#,
            #"stpd_redirect_sessions{status="completed"} 1.0"#, #"stpd_redirect_sessions{status="notStarted"} 0.0"#,
        ] {
            #expect(text.contains(line + "\n"), "\(line)")
        }
        #expect(metrics.text(idle).contains("stpd_connections 0.0\n"))
    }

    @Test func familiesComeSortedByName() {
        let text = StpdMetrics().text(idle)
        let names = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(names == names.sorted())
        #expect(Set(names).count == names.count)
        #expect(names.first == "stpd_connections")
    }
}

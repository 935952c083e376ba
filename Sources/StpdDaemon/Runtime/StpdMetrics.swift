import CoreMetrics
import JSONRPC
import Prometheus
import StpdCore
import StpdProtocol
import StripeAPI
import Synchronization

/// The daemon's instruments, made with swift-metrics on a swift-prometheus registry of its own
/// (not the process-wide `MetricsSystem`, which can be bootstrapped once: tests run several
/// daemons in one process), and the text `daemon.metrics` returns.
///
/// Every label value comes from a fixed set: the declared method names (a call to any other
/// name counts as `(unknown)`), error codes, the code's own Stripe endpoints with their ids
/// replaced, statuses and reasons. Nothing a client sends becomes a label.
public final class StpdMetrics: Sendable {
    static let contentType = "text/plain; version=0.0.4"
    static let unknownMethod = "(unknown)"

    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// By declared method name, made once: a call costs a dictionary lookup, not a registry lock.
    private let methods: [String: MethodInstruments]

    private struct MethodInstruments: Sendable {
        let ok: CoreMetrics.Counter
        let latency: CoreMetrics.Timer
    }

    /// By Stripe endpoint, status and attempt, made on first use: a fresh counter and timer per
    /// attempt took the registry's lock twice and cost ~1.6% of a poll's CPU. The keys come from
    /// a bounded set (see the type's comment); the cap only guards against a bug making it grow.
    private let stripeInstruments = Mutex<[StripeAttemptKey: StripeInstruments]>([:])
    private static let stripeInstrumentsCap = 1024

    private struct StripeAttemptKey: Hashable {
        let endpoint: String
        let status: Int?
        let attempt: Int
    }

    private struct StripeInstruments: Sendable {
        let requests: CoreMetrics.Counter
        let latency: CoreMetrics.Timer
    }

    let eventsAppended: CoreMetrics.Counter
    private let connections: CoreMetrics.Gauge
    private let subscribers: CoreMetrics.Gauge
    private let pollsRunning: CoreMetrics.Gauge
    private let storeSize: CoreMetrics.Gauge

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // From a ping (tens of microseconds) to a Stripe call that times out.
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
            .seconds(30),
        ]
        self.factory = factory
        var methods: [String: MethodInstruments] = [:]
        for name in StpdAPI.methods.map({ $0.name }) + [Self.unknownMethod] {
            methods[name] = MethodInstruments(
                ok: CoreMetrics.Counter(
                    label: "stpd_requests_total", dimensions: [("method", name), ("outcome", "ok")], factory: factory),
                latency: CoreMetrics.Timer(
                    label: "stpd_request_duration_seconds", dimensions: [("method", name)], factory: factory))
        }
        self.methods = methods
        eventsAppended = CoreMetrics.Counter(label: "stpd_events_appended_total", factory: factory)
        connections = CoreMetrics.Gauge(label: "stpd_connections", factory: factory)
        subscribers = CoreMetrics.Gauge(label: "stpd_subscribers", factory: factory)
        pollsRunning = CoreMetrics.Gauge(label: "stpd_polls_running", factory: factory)
        storeSize = CoreMetrics.Gauge(label: "stpd_store_size_bytes", factory: factory)
        // Present from the start, so that a rate over it has a first sample of 0.
        for reason in [DropReason.slowConsumer, .retention] {
            CoreMetrics.Counter(
                label: "stpd_subscribers_dropped_total", dimensions: [("reason", reason.rawValue)], factory: factory
            ).increment(by: 0)
        }
    }

    /// One answered call; `outcome` is `ok`, or the error's code (`-32602`, `1001`).
    func request(method: String, error: RPCError?, duration: Duration) {
        let declared = methods[method]
        let instruments = declared ?? methods[Self.unknownMethod]!
        let label = declared == nil ? Self.unknownMethod : method
        instruments.latency.recordNanoseconds(duration.nanoseconds)
        guard let error else { return instruments.ok.increment() }
        CoreMetrics.Counter(
            label: "stpd_requests_total", dimensions: [("method", label), ("outcome", String(error.code))],
            factory: factory
        ).increment()
    }

    func subscriberDropped(_ reason: DropReason) {
        CoreMetrics.Counter(
            label: "stpd_subscribers_dropped_total", dimensions: [("reason", reason.rawValue)], factory: factory
        ).increment()
    }

    func stripeAttempt(_ attempt: StripeAttempt) {
        let key = StripeAttemptKey(endpoint: attempt.endpoint, status: attempt.status, attempt: attempt.attempt)
        let instruments =
            stripeInstruments.withLock { $0[key] }
            ?? {
                let made = stripeInstruments(for: key)
                stripeInstruments.withLock { cache in
                    if cache.count < Self.stripeInstrumentsCap { cache[key] = made }
                }
                return made
            }()
        instruments.requests.increment()
        instruments.latency.recordNanoseconds(attempt.latency.nanoseconds)
    }

    /// Made outside the cache's lock: the registry takes a lock of its own.
    private func stripeInstruments(for key: StripeAttemptKey) -> StripeInstruments {
        let status = key.status.map(String.init) ?? "none"
        return StripeInstruments(
            requests: CoreMetrics.Counter(
                label: "stpd_stripe_requests_total",
                dimensions: [("endpoint", key.endpoint), ("status", status), ("attempt", String(key.attempt))],
                factory: factory),
            latency: CoreMetrics.Timer(
                label: "stpd_stripe_request_duration_seconds", dimensions: [("endpoint", key.endpoint)],
                factory: factory))
    }

    /// A fleet daemon's gauges (docs/fleet.md lists them).
    private func record(_ fleet: DaemonStatus.FleetStatus) {
        CoreMetrics.Gauge(label: "stpd_database_up", factory: factory).record(fleet.databaseUp ? 1 : 0)
        CoreMetrics.Gauge(label: "stpd_database_reconnects", factory: factory).record(fleet.reconnects)
        CoreMetrics.Gauge(label: "stpd_leases_held", factory: factory).record(fleet.leases.count)
        if let lag = fleet.followerLag {
            CoreMetrics.Gauge(label: "stpd_event_follower_lag", factory: factory).record(lag)
        }
    }

    /// What is read when asked rather than counted as it happens.
    struct Snapshot: Sendable {
        var connections: Int
        var subscribers: Int
        var pollsRunning: Int
        var storeSizeBytes: Int64
        /// Every status of `RedirectStatus`, 0 included, so that the series never vanish; nil
        /// when a fleet's database does not answer (the series keep their last values).
        var redirectSessions: [RedirectStatus: Int]?
        /// In a fleet: the database's health, this daemon's leases, its follower's lag.
        var fleet: DaemonStatus.FleetStatus?
        /// In a fleet: the commits this daemon made, and how long they held the event counter's
        /// row lock in all (docs/fleet.md, "seq").
        var commits: (count: Int, heldSeconds: Double)?
    }

    /// The Prometheus text, with the gauges set from `snapshot` first.
    func text(_ snapshot: Snapshot) -> String {
        connections.record(snapshot.connections)
        subscribers.record(snapshot.subscribers)
        pollsRunning.record(snapshot.pollsRunning)
        storeSize.record(snapshot.storeSizeBytes)
        if let sessions = snapshot.redirectSessions {
            for status in RedirectStatus.allCases {
                CoreMetrics.Gauge(
                    label: "stpd_redirect_sessions", dimensions: [("status", status.rawValue)], factory: factory
                ).record(sessions[status] ?? 0)
            }
        }
        if let fleet = snapshot.fleet { record(fleet) }
        if let commits = snapshot.commits {
            CoreMetrics.Gauge(label: "stpd_database_commits", factory: factory).record(commits.count)
            CoreMetrics.Gauge(label: "stpd_event_counter_held_seconds", factory: factory).record(commits.heldSeconds)
        }
        // The registry emits its families in hash order; sorted by name, a person finds them and
        // two exports compare. Every family begins with its `# TYPE` line (no `# HELP`: swift-metrics
        // has no help text; docs/metrics-and-logs.md describes each).
        let families = registry.emitToString().components(separatedBy: "# TYPE ").filter { !$0.isEmpty }
        return families.sorted().map { "# TYPE " + $0 }.joined()
    }
}

extension Duration {
    /// Whole nanoseconds, saturating (a Duration can exceed what Int64 nanoseconds hold).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

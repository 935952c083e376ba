import Foundation
import Logging
import StripeAPI

/// Logs and counts every attempt of every Stripe call: one line each, with the fields a person
/// looks for in the journal (method, path, status, request_id, latency_ms, attempt,
/// idempotency_key). A failed attempt (no response, or a status other than 2xx) is a warning.
/// Nothing secret goes in: the path has no query, keys and bodies are never logged, and the
/// transport's error text is redacted (StripeAttempt).
enum StripeCallLog {
    static func observer(logger: Logger, metrics: StpdMetrics?) -> @Sendable (StripeAttempt) -> Void {
        { attempt in
            metrics?.stripeAttempt(attempt)
            let path = Redaction.redact(attempt.path)
            let status = attempt.status.map(String.init) ?? "none"
            let milliseconds = tenths(attempt.latency.nanoseconds / 100_000)
            var metadata: Logger.Metadata = [
                "method": "\(attempt.method)", "path": "\(path)", "status": "\(status)",
                "latency_ms": "\(milliseconds)", "attempt": "\(attempt.attempt)",
            ]
            if let id = attempt.requestID { metadata["request_id"] = "\(id)" }
            if let key = attempt.idempotencyKey { metadata["idempotency_key"] = "\(key)" }
            guard attempt.failed else {
                return logger.info(
                    "Stripe \(attempt.method) \(path): \(status) in \(milliseconds) ms", metadata: metadata)
            }
            metadata["will_retry"] = attempt.willRetry ? "1" : "0"
            let what = attempt.failure.map { "no response (\($0))" } ?? status
            let next = attempt.willRetry ? ", retrying" : ""
            logger.warning(
                "Stripe \(attempt.method) \(path) failed: \(what) after \(milliseconds) ms (attempt \(attempt.attempt)\(next))",
                metadata: metadata)
        }
    }

    /// "12.3" for 123 tenths: as `String(format: "%.1f")` (rounding aside) at a fraction of its cost.
    static func tenths(_ tenths: Int64) -> String {
        "\(tenths / 10).\(tenths % 10)"
    }
}

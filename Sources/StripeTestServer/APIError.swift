import Foundation
import JSONRPC

/// A Stripe error response: `{"error": {type, code?, param?, message, decline_code?, ...}}`.
struct APIError: Error, Sendable {
    var status: Int
    var error: [String: JSONValue]

    var body: JSONValue { .object(["error": .object(error)]) }

    init(
        status: Int, type: String, message: String, code: String? = nil, param: String? = nil,
        extra: [String: JSONValue] = [:]
    ) {
        self.status = status
        var e: [String: JSONValue] = ["type": .string(type), "message": .string(message)]
        if let code {
            e["code"] = .string(code)
            e["doc_url"] = .string(
                "https://stripe.com/docs/error-codes/\(code.replacingOccurrences(of: "_", with: "-"))")
        }
        if let param { e["param"] = .string(param) }
        for (k, v) in extra { e[k] = v }
        self.error = e
    }

    static func invalid(_ message: String, param: String? = nil, code: String? = nil, status: Int = 400) -> APIError {
        APIError(status: status, type: "invalid_request_error", message: message, code: code, param: param)
    }

    static func missing(_ param: String) -> APIError {
        invalid("Missing required param: \(param).", param: param, code: "parameter_missing")
    }

    static func notFound(_ kind: String, _ id: String, param: String = "id") -> APIError {
        invalid("No such \(kind): '\(id)'", param: param, code: "resource_missing", status: 404)
    }

    static func unknownParameters(_ names: [String]) -> APIError {
        let message =
            names.count == 1
            ? "Received unknown parameter: \(names[0])"
            : "Received unknown parameters: \(names.joined(separator: ", "))"
        return invalid(message, param: names[0], code: "parameter_unknown")
    }

    static func unknownRoute(_ method: String, _ path: String) -> APIError {
        invalid(
            "Unrecognized request URL (\(method): \(path)). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
            status: 404)
    }

    static func card(
        code: String, declineCode: String? = nil, message: String, param: String? = nil,
        extra: [String: JSONValue] = [:]
    ) -> APIError {
        var extra = extra
        if let declineCode { extra["decline_code"] = .string(declineCode) }
        return APIError(status: 402, type: "card_error", message: message, code: code, param: param, extra: extra)
    }

    /// `sk_test_abc…wxyz` → `sk_test_********wxyz`, as Stripe redacts keys in its messages.
    static func redact(_ key: String) -> String {
        let parts = key.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        let prefix = parts.count == 3 ? "\(parts[0])_\(parts[1])_" : ""
        let rest = parts.count == 3 ? String(parts[2]) : key
        guard rest.count > 4 else { return prefix + String(repeating: "*", count: rest.count) }
        return prefix + String(repeating: "*", count: rest.count - 4) + rest.suffix(4)
    }
}

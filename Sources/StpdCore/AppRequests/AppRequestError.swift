import Foundation
import JSONRPC
import StpdValues

/// The app's answer to a request: what the operation asked for (null included), or an error.
public enum AppRequestReply: Sendable, Hashable {
    case result(JSONValue)
    case failure(AppRequestFailure)
}

/// The error an app answers a request with, instead of a result.
public struct AppRequestFailure: Sendable, Hashable, Codable {
    /// Shown to whoever made the call that needed the answer (e.g. "card declined by our backend").
    public var message: String
    /// The app's own code, passed through untouched.
    public var code: String?

    public init(message: String, code: String? = nil) {
        self.message = message
        self.code = code
    }

    var json: JSONValue {
        ["message": .string(message), "code": code.map(JSONValue.string) ?? .null]
    }
}

/// Why asking the app, or answering it, failed.
public enum AppRequestError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The app did not answer `operation` within `after`.
    case timedOut(operation: String, after: Duration)
    /// The app answered `operation` with an error.
    case failed(message: String, code: String?, operation: String)
    /// The app's answer to `operation` is not what the operation needs (`detail` says what is wrong).
    case malformedAnswer(operation: String, detail: String)
    /// No app request the answering uid may see has this id (another uid's answers the same).
    case notFound(id: String)
    /// The request is over: answered, timed out, cancelled or abandoned.
    case alreadyFinished(id: String, state: String)

    public var description: String {
        switch self {
        case .timedOut(let operation, let after):
            "the app did not answer \(operation) within \(Self.format(after))"
        case .failed(let message, let code, let operation):
            "the app answered \(operation) with an error\(code.map { " (\($0))" } ?? ""): \(message)"
        case .malformedAnswer(let operation, let detail):
            "the app's answer to \(operation) is not usable: \(detail)"
        case .notFound(let id):
            "no app request \(id)"
        case .alreadyFinished(let id, let state) where state == AppRequestState.abandoned.rawValue:
            "app request \(id) was abandoned: the daemon process that asked for it is gone"
        case .alreadyFinished(let id, let state):
            "app request \(id) is already finished (\(state))"
        }
    }

    /// "30 s", "1.5 s", "0.25 s".
    static func format(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds == seconds.rounded(), abs(seconds) < 1e15 { return "\(Int64(seconds)) s" }
        var text = String(format: "%.3f", seconds)
        while text.hasSuffix("0") { text.removeLast() }
        return text + " s"
    }
}

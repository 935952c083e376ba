import Foundation
import JSONRPC

/// How a wait on an object (`source wait`, `redirect wait`) ended, as read from the object's state.
public enum WaitEnd: Equatable, Sendable {
    /// It reached its result without an error: exit 0.
    case succeeded
    /// It ended with this error (a poll's or a redirect's `error`): printed like a daemon error, exit 1.
    case failed(RPCError)
    /// It ended without a result (a poll stopped, a session cancelled): the message, exit 1.
    case ended(String)

    /// An error carried inside an object's state, `{code, message, data}`.
    static func failed(_ error: JSONValue) -> WaitEnd {
        .failed((try? JSONCoding.typed(RPCError.self, from: error)) ?? RPCError(code: 0, message: Render.scalar(error)))
    }
}

/// Helpers of the commands that wait for an object's end.
public enum Waiting {
    /// `4m 12s left`, `41s left`, or `deadline passed` (a poll may overrun it by one interval).
    public static func timeLeft(until deadline: Date, now: Date) -> String {
        let seconds = deadline.timeIntervalSince(now).rounded(.up)
        guard seconds > 0 else { return "deadline passed" }
        return (seconds < 60 ? "\(Int(seconds))s" : Render.duration(seconds)) + " left"
    }

    /// `12s`, `1m 5s`: whole seconds, for a progress line that is redrawn every second.
    public static func elapsed(_ seconds: Double) -> String {
        let whole = max(0, seconds.rounded(.down))
        return whole < 60 ? "\(Int(whole))s" : Render.duration(whole)
    }

    /// RFC 3339, with or without fractional seconds.
    public static func date(_ text: String?) -> Date? {
        guard let text else { return nil }
        return (try? Date.ISO8601FormatStyle().parse(text))
            ?? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
    }

    /// A progress line cut to the terminal's width: a line that wraps cannot be redrawn with `\r`.
    public static func fit(_ line: String, columns: Int) -> String {
        columns > 1 ? EventRender.truncate(line, columns - 1) : line
    }
}

extension WaitEnd {
    /// Returns when it succeeded; otherwise throws what `main` reports with status 1.
    public func check() throws {
        switch self {
        case .succeeded: return
        case .failed(let error): throw error
        case .ended(let message): throw StpctlFailure.ended(message)
        }
    }
}

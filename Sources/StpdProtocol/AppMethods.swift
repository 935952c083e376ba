import JSONRPC

/// `app.*`: the app's lifecycle, which the SDK reads from iOS notifications.
public struct AppLifecycleResult: Codable, Sendable {
    /// Redirect sessions completed (app.foreground, automatic and browser modes).
    public var completedRedirects: [String]
    /// Source polls paused (app.background) or resumed (app.foreground).
    public var polls: [String]
    public init(completedRedirects: [String], polls: [String]) {
        self.completedRedirects = completedRedirects
        self.polls = polls
    }

    static let schema = JSONSchema.object(
        [
            "completedRedirects": .array(of: redirectSessionID, "Sessions completed by this call"),
            "polls": .array(of: sourceID, "Sources whose poll was paused or resumed"),
        ], required: ["completedRedirects", "polls"])
}

public enum AppForeground: RPCMethod {
    public typealias Params = NoParams
    public typealias Result = AppLifecycleResult
    public static let name = "app.foreground"
    public static let summary =
        "The app became active: resumes the caller's paused polls (each polls at once), completes its inProgress automatic/browser redirect sessions, and refreshes expired ephemeral keys of its customer sessions."
    public static let paramsSchema = JSONSchema.empty
    public static let resultSchema = AppLifecycleResult.schema
}

public enum AppBackground: RPCMethod {
    public typealias Params = NoParams
    public typealias Result = AppLifecycleResult
    public static let name = "app.background"
    public static let summary =
        "The app went to the background: pauses the caller's polls (a request in flight still finishes)."
    public static let paramsSchema = JSONSchema.empty
    public static let resultSchema = AppLifecycleResult.schema
}

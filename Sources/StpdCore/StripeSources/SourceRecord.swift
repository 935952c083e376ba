import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// What stpd stores of a Source: the object as last fetched (without its client secret, kept apart
/// so it never reaches an event), and its poll.
struct SourceRecord: DurableRecord {
    struct Poll: Codable, Sendable {
        /// Tells this poll's results from those of one it replaced (nil in rows from before ids).
        var id: String?
        var status: PollStatus
        var progress: PollProgress
        var redirect: String?
        /// Set when it finished: the source status it ended on and the error.
        var sourceStatus: String?
        var error: Failure?

        /// Its poller may still report: running, or paused with a request in flight (whose response counts).
        var isRunningOrPaused: Bool { status == .polling || status == .paused }
    }

    var id: String
    var owner: UInt32
    var clientSecret: String?
    var source: JSONValue
    var poll: Poll?
    /// Created with returnURL "loopback": its redirect session takes the customer back to stpd.
    var loopback: LoopbackReturn?
    var createdAt: Date
    var updatedAt: Date

    init(source: Source, owner: UInt32, clientSecret: String?, at time: Date) {
        id = source.id
        self.owner = owner
        self.clientSecret = clientSecret ?? source.clientSecret
        self.source = source.allResponseFields.withoutClientSecret
        createdAt = time
        updatedAt = time
    }

    var decoded: Source? { try? Source(json: source, codingPath: []) }

    func view(_ failures: any FailureRenderer) -> SourceView {
        let model = decoded
        return SourceView(
            id: id, type: model?.type.rawValue ?? "unknown", flow: model?.flow.rawValue ?? "unknown",
            status: model?.status.rawValue ?? "unknown", usage: model?.usage.rawValue ?? "unknown",
            isReusable: model?.isReusable ?? true,
            redirect: model?.redirect.map {
                .init(status: $0.status.rawValue, url: $0.url.absoluteString, returnURL: $0.returnURL.absoluteString)
            },
            amount: model?.amount, currency: model?.currency, poll: poll.map { Self.pollView($0, failures) },
            source: source,
            createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
    }

    static func pollView(_ poll: Poll, _ failures: any FailureRenderer) -> PollView {
        let deadline = poll.progress.startedAt.addingTimeInterval(poll.progress.timeout)
        let seen = poll.progress.latestSource.flatMap { try? Source(json: $0, codingPath: []) }?.status.rawValue
        return PollView(
            status: poll.status, startedAt: poll.progress.startedAt.formatted(.iso8601),
            deadline: deadline.formatted(.iso8601), timeout: poll.progress.timeout,
            retryCount: poll.progress.retryCount,
            sourceStatus: poll.sourceStatus ?? seen, error: poll.error.map(failures.render), redirect: poll.redirect)
    }

    static let kind = ObjectKind.source
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static let schemaVersion = 1
    static let removed: SourceEvent? = .removed
    static let pausedKey = LookupKey.make("source", "pollPaused")

    /// Stripe's status of the Source, as last fetched.
    var queryStatus: String? { source["status"]?.stringValue }
    /// A running poll needs this process; a paused one waits for app.foreground.
    var isLive: Bool { poll?.status == .polling }
    /// No poll runs or waits for it.
    var isFinished: Bool { poll.map { $0.status == .finished || $0.status == .stopped } ?? true }
    var lookupKeys: [String] { poll?.status == .paused ? [Self.pausedKey] : [] }
}

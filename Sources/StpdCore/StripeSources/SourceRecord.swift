import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// What stpd stores of a Source: the object as last fetched (without its client secret, kept apart
/// so it never reaches an event), and its poll. Public for the edge, which shows it as the
/// contract's `SourceView`.
public struct SourceRecord: DurableRecord {
    public struct Poll: Codable, Sendable {
        /// Tells this poll's results from those of one it replaced (nil in rows from before ids).
        public internal(set) var id: String?
        public internal(set) var status: PollStatus
        public internal(set) var progress: PollProgress
        public internal(set) var redirect: String?
        /// Set when it finished: the source status it ended on and the error.
        public internal(set) var sourceStatus: String?
        public internal(set) var error: Failure?

        /// Its poller may still report: running, or paused with a request in flight (whose response counts).
        public var isRunningOrPaused: Bool { status == .polling || status == .paused }
    }

    public internal(set) var id: String
    public internal(set) var owner: UInt32
    public internal(set) var clientSecret: String?
    public internal(set) var source: JSONValue
    public internal(set) var poll: Poll?
    /// Created with returnURL "loopback": its redirect session takes the customer back to stpd.
    public internal(set) var loopback: LoopbackReturn?
    public internal(set) var createdAt: Date
    public var updatedAt: Date

    init(source: Source, owner: UInt32, clientSecret: String?, at time: Date) {
        id = source.id
        self.owner = owner
        self.clientSecret = clientSecret ?? source.clientSecret
        self.source = source.allResponseFields.withoutClientSecret
        createdAt = time
        updatedAt = time
    }

    public var decoded: Source? { try? Source(json: source, codingPath: []) }

    public func shown(_ views: any RecordViews) throws -> PublicState { try views.source(self) }
    public func publicState(_ views: any RecordViews) throws -> JSONValue { try shown(views).json }

    public static let kind = ObjectKind.source
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    public static let schemaVersion = 1
    public static let removed: SourceEvent? = .removed
    static let pausedKey = LookupKey.make("source", "pollPaused")

    /// Stripe's status of the Source, as last fetched.
    public var queryStatus: String? { source["status"]?.stringValue }
    /// A running poll needs this process; a paused one waits for app.foreground.
    public var isLive: Bool { poll?.status == .polling }
    /// No poll runs or waits for it.
    public var isFinished: Bool { poll.map { $0.status == .finished || $0.status == .stopped } ?? true }
    public var lookupKeys: [String] { poll?.status == .paused ? [Self.pausedKey] : [] }
}

import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization

/// Redirect sessions: the SDK's STPRedirectContext made durable, with `handle-url` as its URL
/// callback and `app.foreground` as becoming active. Started sessions' return URLs live in an
/// index, so matching a URL costs the same with thousands of sessions open as with ten.
/// Events: `redirect.created`, `.started`, `.completed`, `.cancelled`, `.outcome`.
public final class RedirectSessions: Sendable {
    public static let kind = "redirect"

    struct State {
        var records: [String: RedirectRecord] = [:]
        var index = ReturnURLIndex()
        var nextOrder: Int64 = 1
    }

    // Internal, not private: the flow and follow-up extensions in this folder use them.
    let api: any PaymentsAPI
    let sources: SourceService
    let opener: (any URLOpener)?
    let writer: OrderedWriter
    let store: any StateStore
    let background: BackgroundWork
    let now: @Sendable () -> Date
    let defaultFollowUpTimeout: Double
    let state = Mutex(State())
    let outcomeFollowers = Mutex<[any RedirectOutcomeFollower]>([])

    public init(
        api: any PaymentsAPI, sources: SourceService, opener: (any URLOpener)?, log: EventLog, writer: OrderedWriter,
        background: BackgroundWork, followUpTimeout: Double = 10, now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.api = api
        self.sources = sources
        self.opener = opener
        self.writer = writer
        store = log.store
        self.background = background
        defaultFollowUpTimeout = followUpTimeout
        self.now = now
    }

    /// Loads stored sessions, re-registers started ones and finishes follow-ups a restart interrupted.
    public func restore() async throws {
        let stored = try await store.objects(kind: Self.kind).map {
            try JSONCoding.typed(RedirectRecord.self, from: $0.state)
        }
        state.withLock { s in
            for record in stored {
                s.records[record.id] = record
                s.nextOrder = max(s.nextOrder, (record.order ?? 0) + 1)
                if record.status == .inProgress { Self.register(record, in: &s.index) }
            }
        }
        for record in stored where record.awaitsOutcome { await resumeFollowUp(record) }
    }

    // MARK: Creating

    public func create(
        owner: UInt32, viewer: UInt32?, sourceID: String, clientSecret: String?, followUpTimeout: Double?
    ) async throws -> RedirectSessionView {
        guard let secret = clientSecret ?? sources.clientSecret(id: sourceID, viewer: viewer) else {
            throw RPCError.invalidParams(
                "stpd holds no client secret for \(sourceID)", parameter: "source.clientSecret")
        }
        let (_, source) = try await sources.retrieve(id: sourceID, clientSecret: secret, viewer: viewer, owner: owner)
        guard let targets = source.redirectTargets else {
            throw StpdErrors.redirectUnavailable(
                "the source's flow is \(source.flow.rawValue) and its status \(source.status.rawValue)",
                data: [
                    "reason": source.flow == .redirect || source.type == .weChatPay ? "status" : "flow",
                    "status": .string(source.status.rawValue), "flow": .string(source.flow.rawValue),
                    "type": .string(source.rawType),
                ])
        }
        var record = newRecord(owner: owner, kind: .source, secret: secret, followUpTimeout: followUpTimeout)
        record.sourceId = source.id
        record.isWeChat = source.type == .weChatPay
        record.nativeURL = targets.nativeURL?.absoluteString
        record.redirectURL = targets.redirectURL?.absoluteString
        record.returnURL = targets.returnURL?.absoluteString
        return try await insert(record)
    }

    public func create(owner: UInt32, paymentIntentSecret: String, followUpTimeout: Double?) async throws
        -> RedirectSessionView
    {
        let intent = try await api.retrievePaymentIntent(clientSecret: paymentIntentSecret)
        return try await create(
            owner: owner, paymentIntent: intent, clientSecret: paymentIntentSecret, followUpTimeout: followUpTimeout)
    }

    /// For a PaymentIntent already in hand (just confirmed).
    public func create(
        owner: UInt32, paymentIntent intent: PaymentIntent, clientSecret: String, followUpTimeout: Double?
    ) async throws -> RedirectSessionView {
        guard let urls = intent.redirectURLs else {
            throw StpdErrors.redirectUnavailable(
                "the PaymentIntent's status is \(intent.status.rawValue) with next action \(intent.nextAction?.rawType ?? "none")",
                data: [
                    "reason": intent.status == .requiresAction ? "nextAction" : "status",
                    "status": .string(intent.status.rawValue), "flow": .null,
                    "type": intent.nextAction.map { .string($0.rawType) } ?? .null,
                ])
        }
        var record = newRecord(
            owner: owner, kind: .paymentIntent, secret: clientSecret, followUpTimeout: followUpTimeout)
        record.paymentIntentId = intent.id
        record.redirectURL = urls.url.absoluteString
        record.returnURL = urls.returnURL.absoluteString
        return try await insert(record)
    }

    private func newRecord(owner: UInt32, kind: RedirectRecord.Kind, secret: String, followUpTimeout: Double?)
        -> RedirectRecord
    {
        let id = ObjectID.make("rdr_")
        let stamp = now()
        return RedirectRecord(
            id: id, owner: owner, kind: kind, clientSecret: secret,
            followUpTimeout: followUpTimeout ?? defaultFollowUpTimeout,
            createdAt: stamp, updatedAt: stamp)
    }

    private func insert(_ record: RedirectRecord) async throws -> RedirectSessionView {
        let pending = try state.withLock { s in
            s.records[record.id] = record
            return writer.enqueue([try record.change("redirect.created")])
        }
        try await pending.value.get()
        return record.view
    }

    // MARK: Reading

    public func get(id: String, viewer: UInt32?) throws -> RedirectSessionView { try record(id, viewer).view }

    public func list(viewer: UInt32?) -> [RedirectSessionView] {
        state.withLock { Array($0.records.values) }.filter { viewer == nil || $0.owner == viewer }
            .sorted { $0.createdAt < $1.createdAt }.map(\.view)
    }

    func record(_ id: String, _ viewer: UInt32?) throws -> RedirectRecord {
        guard let record = state.withLock({ $0.records[id] }), viewer == nil || record.owner == viewer else {
            throw StpdErrors.notFound("no redirect session \(id)", data: ["session": .string(id)])
        }
        return record
    }

    // MARK: Transitions

    /// Moves a session under the lock and commits it; `mutate` returns the event (nil: no change).
    @discardableResult
    func transition(
        _ id: String, _ mutate: (inout RedirectRecord, inout State) throws -> String?
    ) async throws -> (view: RedirectSessionView, event: String?) {
        let (view, event, pending) = try state.withLock { s -> (RedirectSessionView, String?, OrderedWriter.Pending?) in
            guard var record = s.records[id] else { throw StpdErrors.notFound("no redirect session \(id)") }
            guard let event = try mutate(&record, &s) else { return (record.view, nil, nil) }
            record.updatedAt = now()
            s.records[id] = record
            return (record.view, event, writer.enqueue([try record.change(event)]))
        }
        try await pending?.value.get()
        return (view, event)
    }

    static func register(_ record: RedirectRecord, in index: inout ReturnURLIndex) {
        guard let text = record.returnURL, let url = ReturnURL(text), let order = record.order else { return }
        index.register(session: record.id, owner: record.owner, order: order, url: url)
    }
}

extension RedirectSessions: Sweepable {
    /// A session is finished when cancelled, completed with its outcome (or an error), or never
    /// started: only one in progress, or awaiting its follow-up, is kept whatever its age.
    public func sweep(before cutoff: Date) async throws -> Int {
        let pending = try state.withLock { s -> [OrderedWriter.Pending] in
            let done = s.records.values.filter { record in
                record.updatedAt < cutoff && record.status != .inProgress && !record.awaitsOutcome
            }
            return try done.map { record in
                s.records[record.id] = nil
                return writer.enqueue([try record.change("redirect.removed").removing()])
            }
        }
        for write in pending { try await write.value.get() }
        return pending.count
    }
}

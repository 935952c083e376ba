import Foundation
import JSONRPC
import StpdValues
import StripeAPI
import Synchronization

/// Redirect sessions: the SDK's STPRedirectContext made durable, with `handle-url` as its URL
/// callback and `app.foreground` as becoming active. The record core keeps the sessions; a
/// started session's return URL is filed under a lookup key in the store, so matching a URL
/// costs the same with thousands of sessions open as with ten, from any process sharing the
/// database, and needs nothing in memory. This service owns the follow-ups under way, leased work
/// (`followup:<id>`) that runs on one daemon of a fleet and resumes after a restart.
public final class RedirectSessions: Sendable {
    // Internal, not private: the flow and follow-up extensions in this folder use them.
    let api: any PaymentsAPI
    let sources: SourceService
    /// Follow up an intent's session, as Source polls follow up a Source's.
    let intents: IntentPollers
    let opener: (any URLOpener)?
    let table: RecordTable<RedirectRecord>
    let work: LeasedWork
    let now: @Sendable () -> Date
    let defaultFollowUpTimeout: Double
    let outcomeFollowers = Mutex<[any RedirectOutcomeFollower]>([])
    /// Issues `returnURL: "loopback"`; nil where no listener runs (a test without one).
    public let loopback: LoopbackReturns?

    public init(
        api: any PaymentsAPI, sources: SourceService, intents: IntentPollers, opener: (any URLOpener)?,
        log: EventLog, background: BackgroundWork, followUpTimeout: Double = 10,
        now: @escaping @Sendable () -> Date = Date.init, work: LeasedWork? = nil,
        loopback: LoopbackReturns? = nil, reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        self.api = api
        self.loopback = loopback
        self.sources = sources
        self.intents = intents
        self.opener = opener
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.work = work ?? LeasedWork(background: background)
        defaultFollowUpTimeout = followUpTimeout
        self.now = now
        // Sessions awaiting their outcome are followed up wherever the lease is free.
        self.work.adopt { [self] in try await table.live(for: .daemon).map { followUpJob($0.id) } }
    }

    // MARK: Creating

    public func create(for caller: Caller, sourceID: String, clientSecret: String?, followUpTimeout: Double?)
        async throws -> Shown<RedirectRecord>
    {
        let known = clientSecret == nil ? try await sources.table.find(sourceID, for: caller) : nil
        guard let secret = clientSecret ?? known?.clientSecret else {
            throw DomainError.invalidInput(input: "clientSecret", detail: "stpd holds no client secret for \(sourceID)")
        }
        let (_, source) = try await sources.retrieve(id: sourceID, clientSecret: secret, for: caller)
        guard let targets = source.redirectTargets else {
            throw DomainError.redirectUnavailable(
                detail: "the source's flow is \(source.flow.rawValue) and its status \(source.status.rawValue)",
                data: [
                    "reason": source.flow == .redirect || source.type == .weChatPay ? "status" : "flow",
                    "status": .string(source.status.rawValue), "flow": .string(source.flow.rawValue),
                    "type": .string(source.rawType),
                ])
        }
        var record = newRecord(owner: caller.uid, kind: .source, secret: secret, followUpTimeout: followUpTimeout)
        record.sourceId = source.id
        record.isWeChat = source.type == .weChatPay
        record.nativeURL = targets.nativeURL?.absoluteString
        record.redirectURL = targets.redirectURL?.absoluteString
        record.returnURL = targets.returnURL?.absoluteString
        // Issued when the Source was created through stpd with returnURL "loopback", and stored
        // then only: the record read for its secret holds it already (one read and decode less).
        let loopback = known != nil ? known?.loopback : try await sources.table.find(source.id)?.loopback
        if let issued = loopback,
            let token = record.returnURL.flatMap(LoopbackReturn.token(in:)), issued.matches(token)
        {
            record.loopback = issued
        }
        return try await table.insert(record, .created)
    }

    public func create(for caller: Caller, paymentIntentSecret: String, followUpTimeout: Double?) async throws
        -> Shown<RedirectRecord>
    {
        let intent = try await api.retrievePaymentIntent(clientSecret: paymentIntentSecret)
        return try await create(
            for: caller, intent: intent, clientSecret: paymentIntentSecret, followUpTimeout: followUpTimeout)
    }

    /// For a PaymentIntent or SetupIntent already in hand; the SDK's "no context" refusal when it
    /// has no redirect to follow (or none whose return URL is known).
    public func create(
        for caller: Caller, intent: some StripeIntent, clientSecret: String, followUpTimeout: Double?
    ) async throws -> Shown<RedirectRecord> {
        guard intent.requiresAction, let action = intent.nextAction,
            let target = IntentRedirect(action, confirmedWith: nil), target.isComplete
        else {
            let kind = type(of: intent).kind
            throw DomainError.redirectUnavailable(
                detail:
                    "the \(kind.noun)'s status is \(intent.statusName) with next action \(intent.nextAction?.rawType ?? "none")",
                data: [
                    "reason": intent.requiresAction ? "nextAction" : "status", "status": .string(intent.statusName),
                    "flow": .null, "type": intent.nextAction.map { .string($0.rawType) } ?? .null,
                ])
        }
        return try await create(
            for: caller, intent: intent, clientSecret: clientSecret, target: target, followUpTimeout: followUpTimeout)
    }

    /// For a PaymentIntent or SetupIntent whose redirect kind of next action sends the customer to `target`.
    func create(
        for caller: Caller, intent: some StripeIntent, clientSecret: String, target: IntentRedirect,
        followUpTimeout: Double?, entry: IntentEntry? = nil
    ) async throws -> Shown<RedirectRecord> {
        let kind = type(of: intent).kind
        var record = newRecord(
            owner: caller.uid, kind: .init(kind), secret: clientSecret, followUpTimeout: followUpTimeout)
        if target.opensApp {
            record.nativeURL = target.url.absoluteString
            record.isWeChat = true
        } else {
            record.redirectURL = target.url.absoluteString
        }
        record.returnURL = target.returnURL?.absoluteString
        record.loopback = loopback?.claim(record.returnURL)
        record.entry = entry
        record.paymentMethodType = intent.paymentMethodType
        if intent.paymentMethodType == "alipay" { record.pingURL = intent.nextAction?.alipayReturnPing?.absoluteString }
        switch kind {
        case .paymentIntent: record.paymentIntentId = intent.id
        case .setupIntent: record.setupIntentId = intent.id
        }
        return try await table.insert(record, .created)
    }

    private func newRecord(owner: UInt32, kind: RedirectRecord.Kind, secret: String, followUpTimeout: Double?)
        -> RedirectRecord
    {
        let stamp = now()
        return RedirectRecord(
            id: ObjectID.make("rdr_"), owner: owner, kind: kind, clientSecret: secret,
            followUpTimeout: followUpTimeout ?? defaultFollowUpTimeout, createdAt: stamp, updatedAt: stamp)
    }

    // MARK: Reading

    public func get(id: String, for caller: Caller) async throws -> RedirectRecord {
        try await table.get(id, for: caller)
    }

    public func list(for caller: Caller, status: RedirectStatus?, startingAfter: String?, limit: Int) async throws
        -> ([RedirectRecord], hasMore: Bool)
    {
        let page = try await table.page(
            for: caller, status: status?.rawValue, startingAfter: startingAfter, limit: limit)
        return (page.records, page.hasMore)
    }
}

/// Where an intent's redirect kind of next action sends the customer, and the URL that brings
/// them back: the hash's own return URL, else the confirmation's (Cash App and Swish).
struct IntentRedirect: Sendable {
    var url: URL
    var returnURL: URL?
    /// WeChat Pay's iOS action opens the WeChat app and has no return URL: the session completes
    /// when the app comes back to the foreground, as the SDK's does.
    var opensApp: Bool
    /// `use_stripe_sdk`'s `three_d_secure_redirect` page: the SDK opens it with the action's return
    /// URL when it has one, else without (its browser completes when closed), so no return URL is
    /// required: the session completes on one, on `redirect.report closed` or `app.foreground`.
    var returnOptional: Bool

    /// Nil when the action is no redirect, or lacks a URL that parses.
    init?(_ action: NextAction, confirmedWith returnURL: String?) {
        guard action.kind == .redirect, let target = action.redirect else { return nil }
        url = target.url
        self.returnURL = target.returnURL ?? returnURL.flatMap(URL.strict)
        opensApp = action.type == .wechatPayRedirectToIOSApp
        returnOptional = action.isThreeDSecureRedirect
    }

    /// A voucher's page (`NextAction.voucherPage`): the SDK opens it with no return URL, and the
    /// action ends when the customer closes it.
    init(voucherPage: URL) {
        url = voucherPage
        returnURL = nil
        opensApp = false
        returnOptional = true
    }

    /// Whatever ends the session is known.
    var isComplete: Bool { returnURL != nil || opensApp || returnOptional }
}

extension RedirectSessions: Sweepable {
    /// A session is finished when cancelled, completed with its outcome (or an error), or never
    /// started: only one in progress, or awaiting its follow-up, is kept whatever its age.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

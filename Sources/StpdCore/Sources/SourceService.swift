import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Synchronization

/// Told when a poll that follows up a redirect session ends.
public protocol PollFollower: Sendable {
    func pollFinished(redirect: String, source: JSONValue?, error: JSONValue?) async
}

/// Sources stpd created or retrieved, and their durable polls (the SDK's STPSourcePoller registry:
/// one poll per source, a new one replaces the old silently, a stopped one never reports).
/// Events: `source.created`, `source.retrieved` (first seen), `source.updated`, `source.pollStarted`, `source.polled`,
/// `source.pollPaused`, `source.pollResumed`, `source.pollFinished`, `source.pollStopped`.
public final class SourceService: Sendable {
    public static let kind = "source"

    private let api: any PaymentsAPI
    private let writer: OrderedWriter
    private let store: any StateStore
    private let background: BackgroundWork
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let records = Mutex<[String: SourceRecord]>([:])
    private let pollers = Mutex<[String: SourcePoller]>([:])
    private let follower = Mutex<(any PollFollower)?>(nil)

    public init(
        api: any PaymentsAPI, log: EventLog, writer: OrderedWriter, background: BackgroundWork,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.api = api
        self.writer = writer
        store = log.store
        self.background = background
        self.clock = clock
        self.now = now
    }

    public func follow(with follower: any PollFollower) { self.follower.withLock { $0 = follower } }

    /// Loads the stored Sources and resumes the polls that were running (paused ones stay paused).
    public func restore() async throws {
        let stored = try await store.objects(kind: Self.kind).map {
            try JSONCoding.typed(SourceRecord.self, from: $0.state)
        }
        records.withLock { all in for record in stored { all[record.id] = record } }
        for record in stored where record.poll?.status == .polling { launch(record) }
    }

    public func create(owner: UInt32, params: [String: JSONValue]) async throws -> (SourceView, String?) {
        let source = try await api.createSource(params)
        let record = SourceRecord(source: source, owner: owner, clientSecret: nil, at: now())
        let pending = try records.withLock { all in
            all[record.id] = record
            return writer.enqueue([try record.change("source.created")])
        }
        try await pending.value.get()
        return (record.view, source.clientSecret)
    }

    public func retrieve(id: String, clientSecret: String, viewer: UInt32?, owner: UInt32) async throws -> (
        SourceView, Source
    ) {
        if let known = records.withLock({ $0[id] }), !Self.visible(known, to: viewer) {
            throw StpdErrors.permissionDenied("source \(id) was created by another user", data: ["source": .string(id)])
        }
        let source = try await api.retrieveSource(id: id, clientSecret: clientSecret)
        let view = try await update(id: id) { record in
            guard var known = record else {
                record = SourceRecord(source: source, owner: owner, clientSecret: clientSecret, at: now())
                return "source.retrieved"
            }
            let fresh = SourceRecord.public(source.allResponseFields)
            defer { record = known }
            guard known.source != fresh || known.clientSecret != clientSecret else { return nil }
            known.source = fresh
            known.clientSecret = clientSecret
            return "source.updated"
        }
        return (view, source)
    }

    public func get(id: String, viewer: UInt32?) throws -> SourceView { try record(id, viewer).view }

    public func list(viewer: UInt32?) -> [SourceView] {
        records.withLock { Array($0.values) }.filter { Self.visible($0, to: viewer) }.sorted {
            $0.createdAt < $1.createdAt
        }
        .map(\.view)
    }

    /// The client secret stpd holds for a Source the viewer may see.
    public func clientSecret(id: String, viewer: UInt32?) -> String? {
        records.withLock { $0[id] }.flatMap { Self.visible($0, to: viewer) ? $0.clientSecret : nil }
    }

    /// Starts (or replaces) the Source's poll. `redirect`: the session it follows up.
    public func startPoll(
        id: String, viewer: UInt32?, clientSecret: String?, timeout: Double?, redirect: String? = nil
    ) async throws -> SourceView {
        let known = try record(id, viewer)
        guard let secret = clientSecret ?? known.clientSecret else {
            throw RPCError.invalidParams("stpd holds no client secret for \(id)", parameter: "clientSecret")
        }
        pollers.withLock { $0.removeValue(forKey: id) }?.stop()
        let progress = PollProgress(startedAt: now(), requestedTimeout: timeout ?? SourcePoller.maxTimeout)
        let view = try await update(id: id) { record in
            record!.clientSecret = secret
            record!.poll = .init(status: .polling, progress: progress, redirect: redirect)
            return "source.pollStarted"
        }
        if let record = records.withLock({ $0[id] }) { launch(record) }
        return view
    }

    public func stopPoll(id: String, viewer: UInt32?) async throws -> SourceView {
        let known = try record(id, viewer)
        pollers.withLock { $0.removeValue(forKey: id) }?.stop()
        guard let status = known.poll?.status, status == .polling || status == .paused else { return known.view }
        return try await update(id: id) { record in
            record!.poll!.status = .stopped
            return "source.pollStopped"
        }
    }

    /// app.background: pauses the viewer's running polls; returns their source ids.
    public func pauseAll(viewer: UInt32?) async throws -> [String] {
        let running = records.withLock {
            $0.values.filter { Self.visible($0, to: viewer) && $0.poll?.status == .polling }
        }
        for record in running {
            pollers.withLock { $0[record.id] }?.pause()
            try await update(id: record.id) { record in
                guard record?.poll?.status == .polling else { return nil }
                record!.poll!.status = .paused
                return "source.pollPaused"
            }
        }
        return running.map(\.id)
    }

    /// app.foreground: resumes the viewer's paused polls, each polling at once.
    public func resumeAll(viewer: UInt32?) async throws -> [String] {
        let paused = records.withLock {
            $0.values.filter { Self.visible($0, to: viewer) && $0.poll?.status == .paused }
        }
        for record in paused {
            try await update(id: record.id) { record in
                guard record?.poll?.status == .paused else { return nil }
                record!.poll!.status = .polling
                return "source.pollResumed"
            }
            if let fresh = records.withLock({ $0[record.id] }) { launch(fresh) }
        }
        return paused.map(\.id)
    }

    /// Runs a poller for the record's saved progress as background work (which keeps the daemon up).
    private func launch(_ record: SourceRecord) {
        guard let poll = record.poll, let secret = record.clientSecret else { return }
        let id = record.id
        let api = self.api
        let poller = SourcePoller(
            sourceID: id, clientSecret: secret, progress: poll.progress, clock: clock, now: now,
            fetch: { id, secret in await api.pollSource(id: id, clientSecret: secret) })
        pollers.withLock { $0.removeValue(forKey: id) }?.stop()
        pollers.withLock { $0[id] = poller }
        background.start { [self] in
            let end = await poller.run { progress in await self.progressed(id, poller, progress) }
            if case .finished(let source, let error) = end { await finished(id, poller, source, error) }
        }
    }

    private func isCurrent(_ id: String, _ poller: SourcePoller) -> Bool {
        pollers.withLock { $0[id] === poller }
    }

    /// Saves progress; an event only when what a client sees changed (status seen, error, retries).
    private func progressed(_ id: String, _ poller: SourcePoller, _ progress: PollProgress) async {
        guard isCurrent(id, poller) else { return }
        _ = try? await update(id: id) { record in
            guard let old = record?.poll?.progress else { return nil }
            record!.poll!.progress = progress
            if let latest = progress.latestSource { record!.source = SourceRecord.public(latest) }
            let seen = { (p: PollProgress) in p.latestSource?["status"] }
            let visible =
                seen(old) != seen(progress) || old.retryCount != progress.retryCount
                || old.lastError != progress.lastError
            return visible ? "source.polled" : nil
        }
    }

    private func finished(_ id: String, _ poller: SourcePoller, _ source: JSONValue?, _ error: PollError?) async {
        guard isCurrent(id, poller) else { return }
        pollers.withLock { if $0[id] === poller { $0[id] = nil } }
        let errorJSON = error.map { RPCError.json($0.stripeError) }
        let view = try? await update(id: id) { record in
            guard record?.poll != nil else { return nil }
            if let source { record!.source = SourceRecord.public(source) }
            record!.poll!.status = .finished
            record!.poll!.progress = poller.progress
            record!.poll!.sourceStatus = source?["status"]?.stringValue
            record!.poll!.error = errorJSON
            return "source.pollFinished"
        }
        if let redirect = view?.poll?.redirect, let follower = follower.withLock({ $0 }) {
            await follower.pollFinished(redirect: redirect, source: view?.source, error: errorJSON)
        }
    }

    /// Mutates a record under the lock and commits it with `event` (nil: keep in memory only).
    @discardableResult
    private func update(id: String, _ mutate: (inout SourceRecord?) throws -> String?) async throws -> SourceView {
        let (view, pending) = try records.withLock { all -> (SourceView, OrderedWriter.Pending?) in
            var record = all[id]
            let event = try mutate(&record)
            guard var record else { throw StpdErrors.notFound("no source \(id)", data: ["source": .string(id)]) }
            if event != nil { record.updatedAt = now() }
            all[id] = record
            return (record.view, try event.map { writer.enqueue([try record.change($0)]) })
        }
        try await pending?.value.get()
        return view
    }

    private func record(_ id: String, _ viewer: UInt32?) throws -> SourceRecord {
        guard let record = records.withLock({ $0[id] }), Self.visible(record, to: viewer) else {
            throw StpdErrors.notFound("no source \(id)", data: ["source": .string(id)])
        }
        return record
    }

    static func visible(_ record: SourceRecord, to viewer: UInt32?) -> Bool { viewer == nil || record.owner == viewer }
}

extension SourceService: Sweepable {
    /// A Source is finished when no poll runs or waits for it.
    public func sweep(before cutoff: Date) async throws -> Int {
        let pending = try records.withLock { all -> [OrderedWriter.Pending] in
            let done = all.values.filter { record in
                record.updatedAt < cutoff
                    && (record.poll == nil || record.poll?.status == .finished || record.poll?.status == .stopped)
            }
            return try done.map { record in
                all[record.id] = nil
                return writer.enqueue([try record.change("source.removed").removing()])
            }
        }
        for write in pending { try await write.value.get() }
        return pending.count
    }
}

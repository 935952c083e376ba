import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// What stpd stores of a Source: the object as last fetched (without its client secret, kept apart
/// so it never reaches an event), and its poll.
struct SourceRecord: Codable, Sendable {
    struct Poll: Codable, Sendable {
        var status: PollStatus
        var progress: PollProgress
        var redirect: String?
        /// Set when it finished: the source status it ended on and the error, as RPC error JSON.
        var sourceStatus: String?
        var error: JSONValue?
    }

    enum PollStatus: String, Codable, Sendable { case polling, paused, finished, stopped }

    var id: String
    var owner: UInt32
    var clientSecret: String?
    var source: JSONValue
    var poll: Poll?
    var createdAt: Date
    var updatedAt: Date

    init(source: Source, owner: UInt32, clientSecret: String?, at time: Date) {
        id = source.id
        self.owner = owner
        self.clientSecret = clientSecret ?? source.clientSecret
        self.source = Self.public(source.allResponseFields)
        createdAt = time
        updatedAt = time
    }

    static func `public`(_ fields: JSONValue) -> JSONValue {
        guard case .object(var members) = fields else { return fields }
        members["client_secret"] = nil
        return .object(members)
    }

    var decoded: Source? { try? Source(json: source, codingPath: []) }

    var view: SourceView {
        let model = decoded
        return SourceView(
            id: id, type: model?.type.rawValue ?? "unknown", flow: model?.flow.rawValue ?? "unknown",
            status: model?.status.rawValue ?? "unknown", usage: model?.usage.rawValue ?? "unknown",
            isReusable: model?.isReusable ?? true,
            redirect: model?.redirect.map {
                .init(status: $0.status.rawValue, url: $0.url.absoluteString, returnURL: $0.returnURL.absoluteString)
            },
            amount: model?.amount, currency: model?.currency, poll: poll.map(Self.pollView), source: source,
            createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
    }

    static func pollView(_ poll: Poll) -> PollView {
        let deadline = poll.progress.startedAt.addingTimeInterval(poll.progress.timeout)
        let seen = poll.progress.latestSource.flatMap { try? Source(json: $0, codingPath: []) }?.status.rawValue
        return PollView(
            status: poll.status.rawValue, startedAt: poll.progress.startedAt.formatted(.iso8601),
            deadline: deadline.formatted(.iso8601), timeout: poll.progress.timeout,
            retryCount: poll.progress.retryCount,
            sourceStatus: poll.sourceStatus ?? seen, error: poll.error, redirect: poll.redirect)
    }

    func change(_ event: String) throws -> StateChange {
        let object = StoredObject(
            id: id, kind: SourceService.kind, ownerUID: owner, state: try JSONCoding.value(of: self),
            createdAt: createdAt, updatedAt: updatedAt)
        return StateChange(object: object, eventType: event, publicState: try JSONCoding.value(of: view))
    }
}

extension RPCError {
    /// The error as JSON inside an object's state (a poll's or a redirect's end).
    static func json(_ error: any Error) -> JSONValue {
        let rpc =
            (error as? any RPCErrorConvertible)?.rpcError ?? (error as? RPCError)
            ?? RPCError.internalError(String(describing: error))
        return (try? JSONCoding.value(of: rpc)) ?? .null
    }
}

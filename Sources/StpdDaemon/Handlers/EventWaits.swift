import Foundation
import JSONRPC
import RPCTransport
import StpdProtocol
import Synchronization

/// How many `events.wait` calls may wait at once (`STPD_MAX_WAITS_PER_CONNECTION`,
/// `STPD_MAX_WAITS_PER_UID`).
public struct WaitLimits: Sendable, Hashable {
    public var perConnection = 16
    public var perUID = 256

    public static let perConnectionRange = 1...1000
    public static let perUIDRange = 1...100_000

    public init() {}
}

/// The `events.wait` calls in progress, bounded per connection and per uid: a call past either
/// bound is refused at once (TooManyWaits) instead of holding memory and a bus listener for up to
/// its timeout. When a connection closes (the peer went away), its calls end at once.
final class EventWaits: Sendable {
    let limits: WaitLimits

    private struct State {
        var nextID = 0
        /// The calls of each connection: how to cancel each (nil while it is starting).
        var byConnection: [UInt64: [Int: (@Sendable () -> Void)?]] = [:]
        var byUID: [UInt32: Int] = [:]
        /// Connections whose close is being watched (open ones that have made a call).
        var watched: Set<UInt64> = []
        /// Closed connections that still have calls ending.
        var closed: Set<UInt64> = []
    }

    private let state = Mutex(State())

    init(limits: WaitLimits) { self.limits = limits }

    /// Calls counted now, of every connection.
    var count: Int { state.withLock { $0.byUID.values.reduce(0, +) } }

    /// Runs `body` as one counted call of `connection` by `uid`, cancelled if the connection
    /// closes. Throws TooManyWaits when a bound is reached.
    func run<T: Sendable>(
        connection: RPCConnection, uid: UInt32, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let (id, watch) = try reserve(connection: connection.id, uid: uid)
        defer { release(id, connection: connection.id, uid: uid) }
        // A hook on a connection that is closed already runs at once.
        if watch { connection.whenClosed { [weak self] in self?.connectionClosed(connection.id) } }
        let task = Task { try await body() }
        let closed = state.withLock { s in
            if s.closed.contains(connection.id) { return true }
            s.byConnection[connection.id]?[id] = .some({ task.cancel() })
            return false
        }
        if closed { task.cancel() }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    private func reserve(connection: UInt64, uid: UInt32) throws -> (id: Int, watch: Bool) {
        let outcome: Result<(Int, Bool), RPCError> = state.withLock { s in
            if s.byConnection[connection, default: [:]].count >= limits.perConnection {
                return .failure(Self.refusal("connection", limits.perConnection, "STPD_MAX_WAITS_PER_CONNECTION"))
            }
            if s.byUID[uid, default: 0] >= limits.perUID {
                return .failure(Self.refusal("user", limits.perUID, "STPD_MAX_WAITS_PER_UID"))
            }
            let id = s.nextID
            s.nextID += 1
            s.byConnection[connection, default: [:]][id] = .some(nil)
            s.byUID[uid, default: 0] += 1
            return .success((id, s.watched.insert(connection).inserted))
        }
        return try outcome.get()
    }

    private func release(_ id: Int, connection: UInt64, uid: UInt32) {
        state.withLock { s in
            s.byConnection[connection]?[id] = nil
            if s.byConnection[connection]?.isEmpty == true {
                s.byConnection[connection] = nil
                s.closed.remove(connection)
            }
            s.byUID[uid, default: 1] -= 1
            if s.byUID[uid] == 0 { s.byUID[uid] = nil }
        }
    }

    private func connectionClosed(_ connection: UInt64) {
        let cancels = state.withLock { s -> [@Sendable () -> Void] in
            s.watched.remove(connection)
            guard let calls = s.byConnection[connection] else { return [] }
            s.closed.insert(connection)
            return calls.values.compactMap { $0 }
        }
        for cancel in cancels { cancel() }
    }

    static func refusal(_ scope: String, _ limit: Int, _ setting: String) -> RPCError {
        StpdErrors.tooManyWaits(
            "at most \(limit) per \(scope)",
            data: ["scope": .string(scope), "limit": .int(Int64(limit)), "setting": .string(setting)])
    }
}

import NIOConcurrencyHelpers

/// The outbound bytes of every connection of one uid together (what their outboxes hold queued
/// and reserved), bounded by `limit`: the per-connection budget times 1,000 connections was 4 GB
/// one user could make the daemon hold (issue 32: 309 MB over 1,000 connections that never read).
///
/// An outbox admits bytes only when they fit its own budget and its uid's (`fits`); a uid with
/// nothing held may always send one frame, as an empty outbox may. An outbox refused for its
/// uid's sake is told when another of the uid's outboxes gives bytes back (`starve`), so a call or
/// a notification waiting on one connection goes on once the user reads another.
///
/// Lock order: an outbox's lock, then this one. The wakes `release` returns are run by the
/// caller once it holds no lock (each takes another outbox's lock).
final class OutboundAccount: Sendable {
    let limit: Int

    private struct State {
        var committed = 0
        var starved: [ObjectIdentifier: @Sendable () -> Void] = [:]
    }

    private let state = NIOLockedValueBox(State())

    init(limit: Int) { self.limit = limit }

    var committed: Int { state.withLockedValue { $0.committed } }

    /// Whether `bytes` more fit. A call's share (`ConnectionHandler.callShare`) fits only into
    /// the lower half, as on one connection: the calls started hold at most half, so the other half
    /// is always there for the pages they reserve and the frames they queue, which drain as the
    /// user reads, and calls waiting for room cannot hold it all and wait on one another for good.
    func fits(_ bytes: Int, share: Bool) -> Bool {
        state.withLockedValue { $0.committed + bytes <= (share ? limit / 2 : limit) || $0.committed == 0 }
    }

    /// Adds (or, negative, gives back) bytes; returns the wakes of the outboxes that waited for
    /// room, when bytes were given back.
    func adjust(by delta: Int) -> [@Sendable () -> Void] {
        guard delta != 0 else { return [] }
        return state.withLockedValue { s in
            s.committed += delta
            guard delta < 0, !s.starved.isEmpty else { return [] }
            let wakes = Array(s.starved.values)
            s.starved = [:]
            return wakes
        }
    }

    /// `outbox` was refused for the uid's sake: `wake` runs once bytes are given back.
    func starve(_ outbox: ObjectIdentifier, wake: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.starved[outbox] = wake }
    }

    func forget(_ outbox: ObjectIdentifier) {
        _ = state.withLockedValue { $0.starved.removeValue(forKey: outbox) }
    }
}

/// The accounts of the uids with a connection open, made with the first and dropped with the last.
final class OutboundAccounts: Sendable {
    let limit: Int
    private let accounts = NIOLockedValueBox([UInt32: (account: OutboundAccount, connections: Int)]())

    init(limit: Int) { self.limit = limit }

    func open(uid: UInt32) -> OutboundAccount {
        accounts.withLockedValue { all in
            let account = all[uid]?.account ?? OutboundAccount(limit: limit)
            all[uid] = (account, (all[uid]?.connections ?? 0) + 1)
            return account
        }
    }

    func close(uid: UInt32) {
        accounts.withLockedValue { all in
            guard let entry = all[uid] else { return }
            all[uid] = entry.connections > 1 ? (entry.account, entry.connections - 1) : nil
        }
    }

    /// The bytes `uid`'s connections hold now (0 without any).
    func committed(uid: UInt32) -> Int { accounts.withLockedValue { $0[uid]?.account.committed ?? 0 } }
}

import Foundation
import JSONRPC
import RPCTransport
import StpdCore

/// What a handler knows about the call it answers: the connection, and who is calling (from the
/// kernel's peer credentials, built once per call; ownership checks use nothing else).
public struct CallContext: Sendable {
    public var connection: RPCConnection
    public var caller: Caller
    /// `STPD_MAX_PAGE_BYTES`: what a call that reads a page holds of the connection's budget.
    var pageBytes: Int

    init(connection: RPCConnection, pageBytes: Int) {
        self.connection = connection
        // The transport refuses connections whose credentials it cannot read: there is always a peer.
        caller = Caller(uid: connection.peer.uid, pid: connection.peer.pid)
        self.pageBytes = pageBytes
    }

    /// Room in the connection's outbound budget for a reply being built (see `OutputRoom`).
    var output: OutputRoom {
        let connection = connection
        return OutputRoom(
            hold: { await connection.reserveReply(bytes: $0) }, giveBack: { connection.releaseReply(bytes: $0) })
    }

    /// Holds room for a page before a list reads it; CancellationError once the connection is gone.
    func holdPage() async throws {
        guard await connection.reserveReply(bytes: pageBytes) else { throw CancellationError() }
    }
}

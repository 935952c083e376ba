import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Who is on the other end of a connection, from the kernel (SO_PEERCRED), not from the client.
public struct PeerCredentials: Sendable, Hashable, Codable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var isRoot: Bool { uid == 0 }

    /// Laid out as the kernel's `struct ucred`.
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// The credentials of `channel`'s peer; fails when the kernel cannot tell (the connection
    /// is then refused: stpd never guesses who a caller is).
    public static func of(_ channel: Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(PeerCredentialsUnavailable(reason: "not a socket"))
        }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return future.flatMapErrorThrowing { error in
            throw PeerCredentialsUnavailable(reason: "SO_PEERCRED: \(error)")
        }.map { cred in PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid) }
    }
}

public struct PeerCredentialsUnavailable: Error, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { "peer credentials unavailable: \(reason)" }
}

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

    static func of(_ channel: Channel) async -> PeerCredentials? {
        guard let provider = channel as? SocketOptionProvider else { return nil }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        guard let cred = try? await future.get() else { return nil }
        return PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }
}

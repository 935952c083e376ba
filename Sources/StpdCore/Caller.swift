/// Who is asking. Built for each call from the connection's peer credentials, which the kernel
/// gave when it connected (SO_PEERCRED), or `.daemon` for work stpd does on its own (a poll's
/// progress, a deadline, a follow-up).
/// Ownership is decided here and nowhere else: objects belong to the uid that created them; root
/// and the daemon see every uid's, anyone else only its own.
public struct Caller: Sendable, Hashable, CustomStringConvertible {
    public let uid: UInt32
    /// The calling process, when the kernel told (the daemon's own work has none).
    public let pid: Int32?
    private let isDaemon: Bool

    public init(uid: UInt32, pid: Int32? = nil) {
        self.uid = uid
        self.pid = pid
        isDaemon = false
    }

    /// stpd itself; it owns nothing and sees everything.
    public static let daemon = Caller(daemonUID: 0)

    private init(daemonUID: UInt32) {
        uid = daemonUID
        pid = nil
        isDaemon = true
    }

    public static let rootUID: UInt32 = 0

    /// Whether this caller may see and use objects created by `owner`.
    public func sees(_ owner: UInt32) -> Bool { isDaemon || uid == Self.rootUID || uid == owner }

    /// The owner to narrow queries to: nil when the caller sees everyone's.
    public var ownerFilter: UInt32? { isDaemon || uid == Self.rootUID ? nil : uid }

    public var description: String { isDaemon ? "stpd" : "uid \(uid)" }
}

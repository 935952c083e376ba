import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A listening Unix stream socket, either passed in by systemd or bound here.
public struct ListeningSocket: Sendable {
    public var fileDescriptor: CInt
    public var path: String
    /// True when stpd created the socket file and must remove it on exit.
    public var ownsPath: Bool

    public init(fileDescriptor: CInt, path: String, ownsPath: Bool) {
        self.fileDescriptor = fileDescriptor
        self.path = path
        self.ownsPath = ownsPath
    }
}

public enum UnixListenerError: Error, CustomStringConvertible, Equatable {
    case pathTooLong(path: String, limit: Int)
    case alreadyServing(path: String)
    case notASocket(path: String)
    case system(call: String, path: String, errno: CInt)

    public var description: String {
        switch self {
        case .pathTooLong(let path, let limit):
            return
                "socket path is \(path.utf8.count) bytes, longer than the \(limit) a Unix socket address holds: \(path)"
        case .alreadyServing(let path):
            return
                "another daemon is already serving on \(path) (it accepted a connection); stop it or choose another --socket"
        case .notASocket(let path):
            return "\(path) exists and is not a socket; refusing to replace it"
        case .system(let call, let path, let code):
            return "\(call) \(path): \(String(cString: strerror(code)))"
        }
    }
}

public enum UnixListener {
    /// The umask is process-wide: binds in this process take turns so each gets its own mode.
    /// (stpd binds once, at start-up, before any other thread creates files.)
    private static let bindLock = NIOLock()

    /// Binds `path` with permissions `mode` from the first instant (the umask is narrowed around
    /// bind, so there is no window in which the socket is wider), replacing a stale socket
    /// file but refusing to take over from a live daemon.
    public static func bind(path: String, mode: mode_t, backlog: CInt = 256) throws -> ListeningSocket {
        var address = try socketAddress(path)
        try removeStaleSocket(at: path)
        let fd = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UnixListenerError.system(call: "socket", path: path, errno: errno) }
        let (bound, bindErrno) = bindLock.withLock { () -> (CInt, CInt) in
            let previousMask = umask(~mode & 0o777)
            defer { umask(previousMask) }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            return (rc, errno)
        }
        guard bound == 0 else {
            close(fd)
            throw UnixListenerError.system(call: "bind", path: path, errno: bindErrno)
        }
        guard listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            unlink(path)
            throw UnixListenerError.system(call: "listen", path: path, errno: code)
        }
        return ListeningSocket(fileDescriptor: fd, path: path, ownsPath: true)
    }

    /// The path a listening socket is bound to (used for sockets systemd passes in).
    public static func boundPath(of fd: CInt) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        return withUnsafeBytes(of: address.sun_path) { raw in
            let bytes = raw.prefix(while: { $0 != 0 })
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
    }

    static func socketAddress(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw UnixListenerError.pathTooLong(path: path, limit: capacity - 1)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return address
    }

    /// A socket file nobody accepts on is stale and removed; one that accepts belongs to a live daemon.
    static func removeStaleSocket(at path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else { throw UnixListenerError.notASocket(path: path) }
        if isServing(path) { throw UnixListenerError.alreadyServing(path: path) }
        if unlink(path) != 0, errno != ENOENT {
            throw UnixListenerError.system(call: "unlink", path: path, errno: errno)
        }
    }

    /// Whether something accepts connections on `path`.
    public static func isServing(_ path: String) -> Bool {
        guard var address = try? socketAddress(path) else { return false }
        let fd = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0
    }
}

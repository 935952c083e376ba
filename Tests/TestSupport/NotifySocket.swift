import Foundation
import Synchronization

/// Plays systemd's side of `sd_notify`: an AF_UNIX datagram socket whose path is passed to the
/// daemon as `NOTIFY_SOCKET`. Tests wait for `READY=1` on it instead of polling the daemon's
/// socket, and check `STOPPING=1` on shutdown.
public final class NotifySocket: Sendable {
    public let path: String
    private let fd: CInt
    /// Every datagram received so far, in order.
    private let received = Mutex<[String]>([])

    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.system("socket", errno: errno) }
        var address = try unixAddress(path)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw TestSupportError.system("bind \(path)", errno: code)
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// All datagrams received so far.
    public var messages: [String] { received.withLock { $0 } }

    /// Blocks (on a thread of its own) until a datagram holding the line `assignment`
    /// (e.g. `READY=1`) has arrived, returning that datagram; throws after `deadline`.
    @discardableResult
    public func waitFor(_ assignment: String, deadline: Duration = .seconds(30)) async throws -> String {
        if let earlier = messages.first(where: { Self.holds($0, assignment) }) { return earlier }
        let fd = self.fd
        let end = ContinuousClock.now + deadline
        return try await blocking {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let remaining = end - ContinuousClock.now
                let milliseconds =
                    remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
                guard milliseconds > 0 else {
                    throw TestSupportError.timedOut(
                        "no \(assignment) on the notify socket within \(deadline); got \(self.messages)")
                }
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, CInt(clamping: milliseconds))
                if ready < 0, errno == EINTR { continue }
                guard ready > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw TestSupportError.system("recv", errno: errno)
                }
                let message = String(decoding: buffer[..<n], as: UTF8.self)
                self.received.withLock { $0.append(message) }
                if Self.holds(message, assignment) { return message }
            }
        }
    }

    static func holds(_ message: String, _ assignment: String) -> Bool {
        message.split(separator: "\n").contains { $0 == assignment }
    }
}

import Foundation
import JSONRPC
import Synchronization

/// A blocking AF_UNIX stream client for byte-level tests: it writes exactly the bytes it is
/// given, in as many `send` calls as asked, and reads lines or everything up to EOF.
/// Every blocking call runs on a thread of its own (see `blocking`).
///
/// Reads have a generous receive timeout: it is a deadline that turns a missing reply into a
/// failing test instead of a hung one, never something a test waits out.
public final class RawSocket: Sendable {
    public let fd: CInt
    private let buffer = Mutex<[UInt8]>([])

    /// How the stream ended when read to its end.
    public enum End: Sendable, Equatable {
        case eof
        /// The peer closed while bytes we sent were still unread on its side; Linux then reports
        /// ECONNRESET after the data it did send (instead of a plain EOF).
        case reset
    }

    public init(connectingTo path: String, readTimeout: Duration = .seconds(30)) throws {
        fd = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.system("socket", errno: errno) }
        var address = try unixAddress(path)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestSupportError.system("connect \(path)", errno: code)
        }
        var timeout = timeval(tv_sec: Int(readTimeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    // MARK: Writing

    /// Sends all of `bytes` (MSG_NOSIGNAL: a peer that stopped reading gives EPIPE, not SIGPIPE).
    public func send(_ bytes: [UInt8]) async throws {
        let fd = self.fd
        try await blocking { try Self.sendAll(fd, bytes) }
    }

    public func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Sends `bytes` in separate `send` calls of `pieceSize` bytes each. Returns how many bytes
    /// went out before the peer refused more (EPIPE/ECONNRESET), or all of them.
    @discardableResult
    public func sendInPieces(_ bytes: [UInt8], pieceSize: Int) async throws -> Int {
        let fd = self.fd
        return try await blocking {
            var sent = 0
            while sent < bytes.count {
                let piece = Array(bytes[sent..<min(sent + pieceSize, bytes.count)])
                do { try Self.sendAll(fd, piece) } catch TestSupportError.system(_, let code)
                    where code == EPIPE || code == ECONNRESET
                {
                    return sent
                }
                sent += piece.count
            }
            return sent
        }
    }

    /// Half-closes: the peer reads EOF, and we can still read its replies.
    public func shutdownWrite() {
        _ = shutdown(fd, CInt(SHUT_WR))
    }

    private static func sendAll(_ fd: CInt, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestSupportError.system("send", errno: errno)
            }
            offset += n
        }
    }

    // MARK: Reading

    /// The next line without its `\n`; nil at EOF (or reset) before any byte of a line.
    public func readLine() async throws -> [UInt8]? {
        try await blocking { try self.readLineBlocking() }
    }

    /// The next line decoded as a JSON value; fails at EOF or when the line is not JSON.
    public func readJSONLine() async throws -> JSONValue {
        guard let line = try await readLine() else {
            throw TestSupportError.unexpected("connection ended before a reply")
        }
        do { return try JSONCoding.decode(JSONValue.self, from: Data(line)) } catch {
            throw TestSupportError.unexpected("reply is not JSON: \(String(decoding: line, as: UTF8.self))")
        }
    }

    /// Everything until the peer closes, and how it closed.
    public func readToEnd() async throws -> (bytes: [UInt8], end: End) {
        try await blocking {
            var all = self.buffer.withLock { b in
                defer { b = [] }
                return b
            }
            while true {
                switch try self.receiveChunk() {
                case .data(let chunk): all += chunk
                case .end(let end): return (all, end)
                }
            }
        }
    }

    private enum Chunk {
        case data([UInt8])
        case end(End)
    }

    private func receiveChunk() throws -> Chunk {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return .data(Array(chunk[..<n])) }
            if n == 0 { return .end(.eof) }
            switch errno {
            case EINTR: continue
            case ECONNRESET: return .end(.reset)
            case EAGAIN: throw TestSupportError.timedOut("no data from the server within the read deadline")
            case let code: throw TestSupportError.system("recv", errno: code)
            }
        }
    }

    private func readLineBlocking() throws -> [UInt8]? {
        while true {
            let line: [UInt8]? = buffer.withLock { b in
                guard let newline = b.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { b.removeSubrange(...newline) }
                return Array(b[..<newline])
            }
            if let line { return line }
            switch try receiveChunk() {
            case .data(let chunk): buffer.withLock { $0 += chunk }
            case .end:
                let rest = buffer.withLock { b in
                    defer { b = [] }
                    return b
                }
                return rest.isEmpty ? nil : rest
            }
        }
    }
}

/// `sockaddr_un` for `path`; throws when the path does not fit.
public func unixAddress(_ path: String) throws -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
        throw TestSupportError.unexpected("socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    return address
}

import Foundation

/// A TCP port on 127.0.0.1 whose connects are never answered, as a host behind a network that went
/// away: a listening socket with a backlog of 0 that never accepts, its one queue place taken by a
/// connection of its own, so the kernel drops every further SYN and a client's connect times out.
public final class BlackholePort: Sendable {
    public let port: Int
    private let listener: CInt
    private let filler: CInt

    public init() throws {
        let listener = socket(AF_INET, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestSupportError.system("socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        // Completed by the kernel into the accept queue, which it then fills.
        let filler = bound ? socket(AF_INET, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0) : -1
        let connected =
            filler >= 0
            && withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) == 0 }
            }
        guard connected else {
            let code = errno
            if filler >= 0 { Glibc.close(filler) }
            Glibc.close(listener)
            throw TestSupportError.system("a listener on 127.0.0.1 with its queue filled", errno: code)
        }
        self.listener = listener
        self.filler = filler
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    deinit {
        Glibc.close(filler)
        Glibc.close(listener)
    }
}

import Foundation
import RPCTransport
import StpdProtocol

/// How the daemon got its listening socket.
struct AcquiredListener {
    var socket: ListeningSocket
    var activation: DaemonStatus.Activation
}

enum Listener {
    /// The socket systemd passed (chosen by name), or one bound here at the configured path.
    static func acquire(_ configuration: DaemonConfiguration) throws -> AcquiredListener {
        if let fd = Systemd.listenFD(named: configuration.listenFDName) {
            let path = UnixListener.boundPath(of: fd) ?? "(fd \(fd))"
            return AcquiredListener(
                socket: ListeningSocket(fileDescriptor: fd, path: path, ownsPath: false), activation: .socket)
        }
        let path = try configuration.bindPath()
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            // Only the socket's own folder (e.g. /run/stpd) is created; its parent must exist.
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: false,
                attributes: [.posixPermissions: 0o755])
        }
        let socket = try UnixListener.bind(path: path, mode: configuration.socketMode)
        return AcquiredListener(socket: socket, activation: .bound)
    }
}

import Foundation

/// Where stpctl looks for the daemon. The defaults follow the daemon's own (StpdDaemon's
/// DaemonConfiguration), so a plain `stpctl ping` reaches a plain `stpd`; the clients in
/// `clients/` look in the same order (clients/python/stpd/socket_path.py).
public enum SocketPath {
    public static let environmentVariable = "STPD_SOCKET"
    public static let systemPath = "/run/stpd/stpd.sock"

    /// `--socket`, else `$STPD_SOCKET`, else `/run/stpd/stpd.sock` as root, else
    /// `$XDG_RUNTIME_DIR/stpd.sock` when it exists, else the system socket. Root is checked
    /// before XDG_RUNTIME_DIR because that is where stpd binds as root, and `sudo -i` or a root
    /// login sets XDG_RUNTIME_DIR too. A user without a per-user instance reaches the system one.
    public static func resolve(
        explicit: String?, environment: [String: String], uid: UInt32,
        exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }
    ) -> String {
        func given(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
        if let path = given(explicit) ?? given(environment[environmentVariable]) { return path }
        if uid == 0 { return systemPath }
        if let runtime = given(environment["XDG_RUNTIME_DIR"]), exists("\(runtime)/stpd.sock") {
            return "\(runtime)/stpd.sock"
        }
        return systemPath
    }
}

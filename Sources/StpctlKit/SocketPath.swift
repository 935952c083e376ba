/// Where stpctl looks for the daemon. The defaults follow the daemon's own (StpdDaemon's
/// DaemonConfiguration), so a plain `stpctl ping` reaches a plain `stpd`.
public enum SocketPath {
    public static let environmentVariable = "STPD_SOCKET"
    public static let systemPath = "/run/stpd/stpd.sock"

    /// `--socket`, else `$STPD_SOCKET`, else `/run/stpd/stpd.sock` as root, else
    /// `$XDG_RUNTIME_DIR/stpd.sock`. Root is checked before XDG_RUNTIME_DIR because that is
    /// where stpd binds as root, and `sudo -i` or a root login sets XDG_RUNTIME_DIR too.
    public static func resolve(explicit: String?, environment: [String: String], uid: UInt32) throws -> String {
        func given(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
        if let path = given(explicit) ?? given(environment[environmentVariable]) { return path }
        if uid == 0 { return systemPath }
        if let runtime = given(environment["XDG_RUNTIME_DIR"]) { return "\(runtime)/stpd.sock" }
        throw StpctlFailure.usage(
            "cannot tell where stpd's socket is: XDG_RUNTIME_DIR is not set; pass --socket PATH or set \(environmentVariable)"
        )
    }
}

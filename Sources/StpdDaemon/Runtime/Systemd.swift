import CSystemd
import Foundation

/// The parts of the systemd service protocol stpd uses, through libsystemd.
enum Systemd {
    /// The listening socket systemd passed whose `FileDescriptorName=` is `name`. With a single
    /// unnamed socket (a unit without `FileDescriptorName=`), that one is used.
    static func listenFD(named name: String) -> CInt? {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        // unset_environment = 1 so processes stpd might start do not inherit the sockets.
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return nil }
        defer {
            for i in 0..<Int(count) { free(names?[i]) }
            free(names)
        }
        let passed = (0..<Int(count)).map { i in
            (fd: SD_LISTEN_FDS_START + CInt(i), name: names?[i].map { String(cString: $0) } ?? "")
        }
        if let match = passed.first(where: { $0.name == name }) { return match.fd }
        return passed.count == 1 ? passed[0].fd : nil
    }

    /// Sends `READY=1`, `STATUS=...`, `STOPPING=1`, `WATCHDOG=1`; a no-op outside systemd.
    static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }

    /// Half the watchdog interval when `WatchdogSec=` is set for this process.
    static func watchdogPingInterval() -> Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec / 2))
    }

    /// True when stderr is connected to the journal (systemd sets `JOURNAL_STREAM=dev:inode`).
    static func stderrIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":").compactMap { UInt64($0) }
        var info = stat()
        guard parts.count == 2, fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == parts[0] && UInt64(info.st_ino) == parts[1]
    }
}

import Foundation

/// The calling process's name, as the kernel keeps it (`/proc/<pid>/comm`): stpd's stand-in for the
/// SDK's `companyName` default, the app's bundle name. nil when the process is gone or unreadable.
enum PeerProcessName {
    static func of(pid: Int32, procRoot: String = "/proc") -> String? {
        guard pid > 0, let data = FileManager.default.contents(atPath: "\(procRoot)/\(pid)/comm"),
            let text = String(data: data, encoding: .utf8)
        else { return nil }
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }
}

import Foundation

/// Directories and files the configuration tests write, with their modes set explicitly: stpd
/// refuses a config file (or a directory above it) that group or others may write to, and the
/// umask these would otherwise get is process-wide, narrowed for a moment by binds in other tests.
enum TrustedFiles {
    static func directory(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try make(directoryAt: url.path)
        return url
    }

    static func make(directoryAt path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o755)
    }

    static func write(_ text: String, to path: String, mode: mode_t = 0o644) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
    }
}

import CSystemd
import Foundation
import Logging

/// Writes log records to journald with structured fields: metadata keys become fields
/// (`object_id` → `OBJECT_ID`), so `journalctl OBJECT_ID=src_123` finds every line about it.
struct JournalLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    let label: String

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        var fields = [
            "MESSAGE=\(event.message)",
            "PRIORITY=\(Self.priority(event.level))",
            "SYSLOG_IDENTIFIER=stpd",
            "STPD_LOGGER=\(label)",
            "CODE_FILE=\(event.file)",
            "CODE_LINE=\(event.line)",
            "CODE_FUNC=\(event.function)",
        ]
        for (key, value) in merged { fields.append("\(Self.fieldName(key))=\(value)") }
        Self.send(fields)
    }

    static func send(_ fields: [String]) {
        let copies = fields.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let vectors = copies.map { iovec(iov_base: UnsafeMutableRawPointer($0), iov_len: $0.map { strlen($0) } ?? 0) }
        _ = sd_journal_sendv(vectors, CInt(vectors.count))
    }

    /// Journal field names: upper-case letters, digits and underscores, not starting with `_`.
    static func fieldName(_ key: String) -> String {
        let mapped = key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
        let name = String(mapped).trimmingCharacters(in: CharacterSet(charactersIn: "_"))
        return name.isEmpty ? "STPD_FIELD" : (name.first!.isNumber ? "F_\(name)" : name)
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }
}

import Foundation
import JSONRPC
import StpctlKit

/// Human text on a terminal, JSON otherwise: results on stdout, errors on stderr.
struct Output: Sendable {
    enum Format: Sendable { case human, json, prettyJSON }

    let format: Format
    /// Print client secrets and credentials as they are (`--show-secrets`).
    let showSecrets: Bool

    init(forceJSON: Bool, showSecrets: Bool = false, stdoutIsTerminal: Bool = isatty(STDOUT_FILENO) == 1) {
        self.showSecrets = showSecrets
        switch (forceJSON, stdoutIsTerminal) {
        case (false, true): format = .human
        case (true, true): format = .prettyJSON
        case (_, false): format = .json
        }
    }

    /// Prints one result: `human(value)` for people, the value itself as JSON for programs, with
    /// secrets redacted unless asked for (`Secrets`).
    func result<T: Encodable>(_ value: T, human: (T) -> String) {
        guard format != .human else {
            return Self.write(showSecrets ? human(value) : Secrets.redacted(text: human(value)), to: .standardOutput)
        }
        let json = (try? JSONCoding.value(of: value)).map { showSecrets ? $0 : Secrets.redacted($0) } ?? .null
        Self.write(Render.json(json, pretty: format == .prettyJSON), to: .standardOutput)
    }

    /// A daemon error reply; in JSON mode the error object, on one line.
    func failure(_ error: RPCError) {
        Self.write(format == .human ? Render.error(error) : Render.json(error, pretty: false), to: .standardError)
    }

    /// A problem stpctl found itself (cannot connect, timeout, usage): always plain text.
    static func diagnostic(_ message: String) {
        write("stpctl: \(message)", to: .standardError)
    }

    // Unbuffered writes: lines show up at once when piped (event streams), and nothing is
    // lost when the process exits with exit().
    static func write(_ text: String, to handle: FileHandle) {
        try? handle.write(contentsOf: Data((text + "\n").utf8))
    }
}

import Foundation
import JSONRPC

/// Text for humans. Pure functions so the wording can be tested; `Output` does the writing.
public enum Render {
    /// `key: value` lines with the values aligned.
    public static func table(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { key, value in
            pad("\(key):", width + 1) + " " + value
        }.joined(separator: "\n")
    }

    /// Two aligned columns without a colon (names and their summaries).
    public static func columns(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { left, right in
            pad(left, width) + "  " + right
        }.joined(separator: "\n")
    }

    /// `error <code>: <message>`, then the members of `data` (or `data` itself) indented.
    public static func error(_ error: RPCError) -> String {
        var text = "error \(error.code): \(error.message)"
        switch error.data {
        case nil: break
        case .object(let members)?:
            let rows = members.keys.sorted().map { ($0, scalar(members[$0]!)) }
            if !rows.isEmpty { text += "\n" + indent(table(rows)) }
        case let data?:
            text += "\n  data: " + scalar(data)
        }
        return text
    }

    /// A string as itself, anything else as compact JSON.
    public static func scalar(_ value: JSONValue) -> String {
        if case .string(let s) = value { return s }
        return json(value, pretty: false)
    }

    public static func json(_ value: some Encodable, pretty: Bool) -> String {
        // JSONValue and the protocol's result types always encode; a failure would be a bug here.
        guard let data = try? JSONCoding.encode(value, pretty: pretty) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// `3d 4h 5m 6s`, leading zero units left out; under a minute with one decimal.
    public static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return String(format: "%.1fs", max(0, seconds)) }
        var rest = Int(seconds)
        var parts: [String] = []
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] where rest >= size || !parts.isEmpty {
            parts.append("\(rest / size)\(unit)")
            rest %= size
        }
        parts.append("\(rest)s")
        return parts.joined(separator: " ")
    }

    public static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.2f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }

    public static func seconds(_ value: Double) -> String {
        value.rounded() == value ? "\(Int64(value)) s" : "\(value) s"
    }

    /// The OpenRPC document as a list of methods and their summaries.
    public static func methods(of document: JSONValue) -> String {
        let title = document["info"]?["title"]?.stringValue ?? "stpd"
        let version = document["info"]?["version"]?.stringValue ?? "?"
        let methods = (document["methods"]?.arrayValue ?? []).map {
            ($0["name"]?.stringValue ?? "?", $0["summary"]?.stringValue ?? "")
        }.sorted { $0.0 < $1.0 }
        return "\(title) protocol \(version): \(methods.count) methods (stpctl describe METHOD tells more)\n"
            + indent(columns(methods))
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    static func indent(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n")
    }
}

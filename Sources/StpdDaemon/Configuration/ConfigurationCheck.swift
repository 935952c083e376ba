import Foundation

/// Reading settings strictly: command-line flags parsed from the declarations, unknown keys
/// reported with the nearest known one, and the renderings of the list (help, the docs' settings table).
extension ConfigurationKeys {
    /// Where a value came from, for messages.
    public enum Origin: Sendable, Hashable, CustomStringConvertible {
        case flag(String)
        case environment
        case file(path: String, line: Int)

        public var description: String {
            switch self {
            case .flag(let flag): flag
            case .environment: "the environment"
            case .file(let path, let line): "\(path):\(line)"
            }
        }
    }

    /// `--flag VALUE`, `--flag=VALUE` and switches into `[key: value]`. A value is taken as given,
    /// even when it starts with `-` (so `--max-frame-bytes -5` is refused for its range, not as a
    /// missing value). An unknown flag is an error naming the nearest known one.
    public static func parseArguments(_ arguments: [String], extraFlags: [String] = []) throws -> [String: String] {
        var values: [String: String] = [:]
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--") else { throw ConfigurationError.unexpectedArgument(argument) }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let flag = String(parts[0])
            guard let setting = all.first(where: { $0.flag == flag }) else {
                let known = all.compactMap(\.flag) + extraFlags
                throw ConfigurationError.unknownFlag(flag, suggestion: nearest(flag, among: known))
            }
            if setting.isSwitch {
                guard parts.count == 1 else { throw ConfigurationError.switchWithValue(flag) }
                values[setting.key] = "1"
            } else if parts.count == 2 {
                values[setting.key] = String(parts[1])
            } else if let value = rest.popFirst() {
                values[setting.key] = value
            } else {
                throw ConfigurationError.missingValue(flag, setting.valueName)
            }
        }
        return values
    }

    /// What is wrong with the keys given: `STPD_*` names in the environment (any case) and every
    /// key of the config file that no setting takes there. One message each, naming where the key
    /// was and the nearest known key.
    static func unknownKeys(environment: [String: String], file: ConfigFile.Contents?) -> [String] {
        var problems: [String] = []
        let inEnvironment = all.filter { $0.sources.contains(.environment) }.map(\.key)
        for name in environment.keys.sorted() where name.uppercased().hasPrefix("STPD_") {
            guard !inEnvironment.contains(name), !othersInEnvironment.contains(name) else { continue }
            problems.append("unknown key \(name) in the environment: \(advice(name, among: inEnvironment))")
        }
        guard let file else { return problems }
        let inFile = all.filter { $0.sources.contains(.file) }.map(\.key)
        for (name, line) in file.lines.sorted(by: { $0.value < $1.value }) where !inFile.contains(name) {
            let problem =
                if all.contains(where: { $0.key == name }) {
                    "\(name) has no effect in a config file"
                } else {
                    "unknown key \(name): \(advice(name, among: inFile))"
                }
            problems.append("\(file.path):\(line): \(problem)")
        }
        return problems
    }

    static func advice(_ name: String, among keys: [String]) -> String {
        guard let match = nearest(name, among: keys) else {
            return "no setting has a name like it (stpd --help lists them)"
        }
        return match == name.uppercased() ? "keys are upper case: did you mean \(match)?" : "did you mean \(match)?"
    }

    /// The candidate closest to `name` by edit distance, ignoring case (and a missing `STPD_`),
    /// when it is close enough to be a slip rather than another word.
    static func nearest(_ name: String, among candidates: [String]) -> String? {
        let upper = name.uppercased()
        let forms = upper.hasPrefix("STPD_") || upper.hasPrefix("--") ? [upper] : [upper, "STPD_" + upper]
        let scored = candidates.map { candidate in
            (candidate, forms.map { editDistance($0, candidate.uppercased()) }.min()!)
        }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, upper.count / 4) else { return nil }
        return best.0
    }

    /// Levenshtein distance: insertions, deletions and substitutions of one character.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var row = [i + 1]
            for (j, y) in b.enumerated() {
                row.append(min(previous[j + 1] + 1, row[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = row
        }
        return previous[b.count]
    }

    /// The settings as `stpd --help` lists them: a paragraph each (ArgumentParser rewraps the text).
    public static var helpText: String {
        all.map { setting in
            let flag = setting.flag.map { setting.isSwitch ? $0 : "\($0) \(setting.valueName)" } ?? "(no flag)"
            let text =
                "\(flag), \(setting.key): \(setting.summary). Accepts \(setting.accepts); default \(setting.defaultValue)."
            return text.replacingOccurrences(of: "`", with: "")
        }.joined(separator: "\n\n")
    }

    /// The settings table of docs/configuration.md (`make settings-table` puts it between its markers).
    public static var markdownTable: String {
        let rows = all.map { setting in
            let flag = setting.flag.map { "`\($0)`" } ?? "none"
            let value = setting.sources == .all ? flag : "\(flag) (\(sourcesText(setting.sources)) only)"
            let byDefault = setting.defaultIsValue ? "`\(setting.defaultValue)`" : setting.defaultValue
            return "| `\(setting.key)` | \(value) | \(byDefault) | \(setting.accepts) | \(setting.summary) |"
        }
        return (["| key | flag | default | accepts | what it does |", "|---|---|---|---|---|"] + rows)
            .joined(separator: "\n")
    }

    private static func sourcesText(_ sources: ConfigurationKey.Sources) -> String {
        var names: [String] = []
        if sources.contains(.flag) { names.append("flag") }
        if sources.contains(.environment) { names.append("environment") }
        if sources.contains(.file) { names.append("config file") }
        return names.joined(separator: " or ")
    }
}

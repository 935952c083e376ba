import Foundation

/// One setting of the daemon, declared once in `ConfigurationKeys.all`: its key, its flag, where
/// it may be given, its default, what it accepts, what it does, how its text is parsed into
/// `DaemonConfiguration` and how its value is shown. `stpd --help`, the command-line parser, the
/// unknown-key check, the logged configuration and the settings table in docs/configuration.md all come from that list.
public struct ConfigurationKey: Sendable {
    /// Where a setting may be given.
    public struct Sources: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let flag = Sources(rawValue: 1)
        public static let environment = Sources(rawValue: 2)
        public static let file = Sources(rawValue: 4)
        public static let all: Sources = [.flag, .environment, .file]
    }

    /// A refused value: what the setting accepts (the resolver adds the key, the value and its origin).
    struct Refusal: Error {
        var expected: String
    }

    public let key: String
    /// `--max-frame-bytes`; nil when the setting has no flag.
    public let flag: String?
    /// A flag given alone that means `1` (`--debug-methods`), rather than one taking a value.
    public let isSwitch: Bool
    /// What `--help` shows after the flag (`--max-frame-bytes N`).
    public let valueName: String
    public let sources: Sources
    /// The default as documentation shows it (the value itself lives in `DaemonConfiguration`).
    public let defaultValue: String
    /// `defaultValue` is a value as it would be written (`1048576`), not a description (`none`):
    /// an example config file can show it as `KEY=VALUE`.
    public let defaultIsValue: Bool
    /// What it accepts: a number's range with its unit, the choices, or the format.
    public let accepts: String
    /// A number's accepted range (every numeric setting has one; `accepts` states it with its unit).
    public let range: ClosedRange<Int>?
    /// What it does.
    public let summary: String
    /// Parses the text and stores the value; throws `Refusal` for a value outside `accepts`.
    let apply: @Sendable (inout DaemonConfiguration, String) throws -> Void
    /// The value in effect, as the log shows it (never a secret).
    let current: @Sendable (DaemonConfiguration) -> String

    init(
        _ key: String, flag: String?, isSwitch: Bool = false, valueName: String = "VALUE", sources: Sources = .all,
        defaultValue: String? = nil, accepts: String, range: ClosedRange<Int>? = nil, summary: String,
        apply: @escaping @Sendable (inout DaemonConfiguration, String) throws -> Void,
        current: @escaping @Sendable (DaemonConfiguration) -> String
    ) {
        self.key = key
        self.flag = flag
        self.isSwitch = isSwitch
        self.valueName = valueName
        self.sources = flag == nil ? sources.subtracting(.flag) : sources
        // Unless told otherwise, the default is what a configuration holds before anything is set.
        self.defaultValue = defaultValue ?? current(DaemonConfiguration(stateDirectory: ""))
        defaultIsValue = defaultValue == nil
        self.accepts = accepts
        self.range = range
        self.summary = summary
        self.apply = apply
        self.current = current
    }

    /// A whole number within `range`, stored as is.
    static func number(
        _ key: String, flag: String, _ path: WritableKeyPath<DaemonConfiguration, Int> & Sendable,
        range: ClosedRange<Int>, unit: String, summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            key, flag: flag, valueName: "N", accepts: "\(range.lowerBound) to \(range.upperBound) \(unit)",
            range: range, summary: summary,
            apply: { c, raw in c[keyPath: path] = try whole(raw, range, unit) },
            current: { "\($0[keyPath: path])" })
    }

    /// Whole seconds within `range`, stored as a Duration.
    static func seconds(
        _ key: String, flag: String, _ path: WritableKeyPath<DaemonConfiguration, Duration> & Sendable,
        range: ClosedRange<Int>, summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            key, flag: flag, valueName: "SECONDS", accepts: "\(range.lowerBound) to \(range.upperBound) seconds",
            range: range, summary: summary,
            apply: { c, raw in c[keyPath: path] = .seconds(try whole(raw, range, "seconds")) },
            current: { "\($0[keyPath: path].components.seconds)" })
    }

    /// Whole seconds within `range`, stored as a Double (the domain's timeouts).
    static func seconds(
        _ key: String, flag: String, _ path: WritableKeyPath<DaemonConfiguration, Double> & Sendable,
        range: ClosedRange<Int>, summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            key, flag: flag, valueName: "SECONDS", accepts: "\(range.lowerBound) to \(range.upperBound) seconds",
            range: range, summary: summary,
            apply: { c, raw in c[keyPath: path] = Double(try whole(raw, range, "seconds")) },
            current: { "\(Int($0[keyPath: path]))" })
    }

    /// `1` or `0`, nothing else: a switch that also took `yes` or `on` would take `off` in another
    /// spelling too, and a typo must not enable a debug method.
    static func onOff(
        _ key: String, flag: String, _ path: WritableKeyPath<DaemonConfiguration, Bool> & Sendable, summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            key, flag: flag, isSwitch: true, accepts: "1 or 0", summary: summary,
            apply: { c, raw in
                switch raw {
                case "1": c[keyPath: path] = true
                case "0": c[keyPath: path] = false
                default: throw Refusal(expected: "1 or 0")
                }
            },
            current: { $0[keyPath: path] ? "1" : "0" })
    }

    /// Text (an empty value means unset).
    static func text(
        _ key: String, flag: String?, sources: Sources = .all,
        _ path: WritableKeyPath<DaemonConfiguration, String?>
            & Sendable,
        valueName: String = "VALUE", defaultValue: String = "none", accepts: String, summary: String
    ) -> ConfigurationKey {
        ConfigurationKey(
            key, flag: flag, valueName: valueName, sources: sources, defaultValue: defaultValue, accepts: accepts,
            summary: summary,
            apply: { c, raw in c[keyPath: path] = raw.isEmpty ? nil : raw },
            current: { $0[keyPath: path] ?? "(none)" })
    }

    static func whole(_ raw: String, _ range: ClosedRange<Int>, _ unit: String) throws -> Int {
        guard let n = Int(raw), range.contains(n) else {
            throw Refusal(expected: "a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }
}

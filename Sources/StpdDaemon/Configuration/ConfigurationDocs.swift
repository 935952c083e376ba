import Foundation

/// The settings as the packages ship them: a commented config file (installed as
/// `/etc/stpd/stpd.conf`) and the stpd.conf(5) manual page. Both are generated from
/// `ConfigurationKeys.all` when a package is built (`stpd --print-example-config`,
/// `stpd --print-config-manual`), so neither can fall behind the declarations.
extension ConfigurationKeys {
    /// The settings a config file may hold (`STPD_CONFIG` names the file itself).
    static var fileSettings: [ConfigurationKey] { all.filter { $0.sources.contains(.file) } }

    /// Every setting a config file may hold, commented out: a line `#KEY=DEFAULT` where the default
    /// is a value, else `#KEY=` with the default described above it (an empty value means unset).
    public static var exampleConfigFile: String {
        var lines = [
            "# stpd's settings (see stpd.conf(5)): KEY=VALUE lines; a line starting with # is a comment.",
            "# A flag of stpd overrides the environment, which overrides this file. The system unit",
            "# (stpd.service) reads this file as its EnvironmentFile=; stpd run as root reads",
            "# /etc/stpd/stpd.conf itself, any other user $XDG_CONFIG_HOME/stpd/stpd.conf.",
            "# Every setting is listed with its default, commented out: uncomment a line to change it.",
            "# The Stripe key belongs in a systemd credential (/etc/credstore/stpd.stripe-key), not here.",
            "# stpd refuses this file if anyone but root and its own user can change it, or a directory above it.",
        ]
        for setting in fileSettings {
            lines.append("")
            let flag = setting.flag.map { setting.isSwitch ? " (\($0))" : " (\($0) \(setting.valueName))" } ?? ""
            lines += wrapped("\(setting.key)\(flag): \(plain(setting.summary)).", prefix: "# ")
            lines += wrapped("Accepts \(plain(setting.accepts)).", prefix: "# ")
            if setting.defaultIsValue {
                lines.append("#\(setting.key)=\(setting.defaultValue)")
            } else {
                lines += wrapped("Default: \(plain(setting.defaultValue)).", prefix: "# ")
                lines.append("#\(setting.key)=")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// stpd.conf(5) in man(7) markup.
    public static func configManualPage(version: String) -> String {
        var page = [
            ".TH STPD.CONF 5 \"\" \"stpd \(version)\" \"File Formats Manual\"",
            ".SH NAME",
            "stpd.conf \\- settings of the stpd payments daemon",
            ".SH SYNOPSIS",
            ".I /etc/stpd/stpd.conf",
            ".br",
            ".I $XDG_CONFIG_HOME/stpd/stpd.conf",
            ".SH DESCRIPTION",
            "Each setting of",
            ".BR stpd (8)",
            "is a line",
            ".IB KEY = VALUE\\fR;",
            "blank lines and lines starting with",
            ".B #",
            "are ignored, and a value may be enclosed in double quotes (the format of a systemd",
            ".BR EnvironmentFile= ,",
            "so that one file serves both).",
            "A key given twice takes its last value.",
            "Each setting may also be given as an environment variable of the same name and, unless",
            "stated otherwise, as a flag of",
            ".BR stpd ;",
            "a flag overrides the environment, which overrides the file, which overrides the default.",
            "An unknown",
            ".B STPD_*",
            "key is reported with the nearest known one when stpd starts.",
            ".PP",
            "stpd refuses to start when this file, a file it names",
            "(\\fBSTPD_STRIPE_KEY_FILE\\fR, \\fBSTPD_DATABASE_PASSWORD_FILE\\fR),",
            "or a directory on the way to either can be changed by anyone but root and stpd's own user,",
            "or when one is reached through a symbolic link another user owns, as OpenSSH does with its files:",
            "such a file could turn on debug methods, grant server-key access or send the key elsewhere.",
            ".PP",
            "stpd run as root reads",
            ".IR /etc/stpd/stpd.conf ,",
            "any other user",
            ".I $XDG_CONFIG_HOME/stpd/stpd.conf",
            "(if present), unless",
            ".B \\-\\-config",
            "or",
            ".B STPD_CONFIG",
            "names another file.",
            "The system unit",
            ".I stpd.service",
            "runs stpd as a dynamic user and passes",
            ".I /etc/stpd/stpd.conf",
            "as its",
            ".BR EnvironmentFile= .",
            ".SH SETTINGS",
        ]
        for setting in all {
            page.append(".TP")
            page.append(".B \(roff(setting.key))")
            page.append(roff(setting.summary) + ".")
            page.append(".br")
            page.append("Accepts \(roff(setting.accepts)).")
            page.append(".br")
            let shown = setting.defaultIsValue ? "\\fB\(roff(setting.defaultValue))\\fR" : roff(setting.defaultValue)
            page.append("Default: \(shown).")
            page.append(".br")
            page.append(roff(where: setting) + ".")
        }
        page += [
            ".SH FILES",
            ".TP",
            ".I /etc/stpd/stpd.conf",
            "the system instance's settings, installed with every setting commented out at its default",
            ".TP",
            ".I /etc/credstore/stpd.stripe-key",
            "the Stripe key of the system instance, passed as the credential",
            ".B stripe\\-key",
            ".SH SEE ALSO",
            ".BR stpd (8),",
            ".BR stpctl (1),",
            ".BR systemd.exec (5),",
            ".BR systemd\\-creds (1)",
        ]
        return page.joined(separator: "\n") + "\n"
    }

    /// Where a setting may be given, for the manual.
    private static func roff(where setting: ConfigurationKey) -> String {
        var places: [String] = []
        if let flag = setting.flag {
            places.append(
                setting.isSwitch
                    ? "flag \\fB\(roff(flag))\\fR" : "flag \\fB\(roff(flag))\\fR \\fI\(setting.valueName)\\fR")
        }
        if setting.sources.contains(.environment) { places.append("the environment") }
        if setting.sources.contains(.file) { places.append("this file") }
        return "Given as " + places.joined(separator: ", ")
    }

    /// Text with its code spans as plain text (the config file is not Markdown).
    private static func plain(_ text: String) -> String {
        text.replacingOccurrences(of: "`", with: "").replacingOccurrences(of: "…", with: "...")
    }

    /// Text in man(7) markup: code spans bold, backslashes, hyphens and line-leading dots escaped.
    static func roff(_ text: String) -> String {
        var out = ""
        var inCode = false
        for character in text {
            switch character {
            case "`":
                out += inCode ? "\\fR" : "\\fB"
                inCode.toggle()
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "…": out += "..."
            case "'", ".":
                // A control character only at the start of a line; \& keeps it text.
                out += out.isEmpty || out.hasSuffix("\n") ? "\\&\(character)" : String(character)
            default: out.append(character)
            }
        }
        return out
    }

    /// Words on lines of at most 100 characters, each starting with `prefix`.
    private static func wrapped(_ text: String, prefix: String) -> [String] {
        var lines: [String] = []
        var line = prefix
        for word in text.split(separator: " ") {
            if line.count > prefix.count, line.count + 1 + word.count > 100 {
                lines.append(line)
                line = prefix
            }
            line += (line.count > prefix.count ? " " : "") + word
        }
        lines.append(line)
        return lines
    }
}

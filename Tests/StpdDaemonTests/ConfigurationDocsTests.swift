import Foundation
import Testing

@testable import StpdDaemon

/// The packages' /etc/stpd/stpd.conf and stpd.conf(5), generated from `ConfigurationKeys.all`:
/// every setting is in both, and the config file, uncommented, is a valid one that changes nothing.
@Suite final class ConfigurationDocsTests {
    let directory: URL

    init() throws {
        directory = try TrustedFiles.directory("stpd-docs")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    @Test func theExampleConfigListsEveryFileSettingOnceCommentedOut() {
        let lines = ConfigurationKeys.exampleConfigFile.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.isEmpty || $0.hasPrefix("#") }, "nothing is set by default")
        #expect(lines.allSatisfy { $0.count <= 100 })
        for setting in ConfigurationKeys.all {
            let count = lines.filter { $0.hasPrefix("#\(setting.key)=") }.count
            #expect(count == (setting.sources.contains(.file) ? 1 : 0), "\(setting.key)")
        }
    }

    /// Uncommenting every `#KEY=VALUE` line gives a file stpd accepts, with the defaults in effect.
    @Test func theExampleConfigUncommentedResolvesToTheDefaults() throws {
        let uncommented = ConfigurationKeys.exampleConfigFile.split(separator: "\n")
            .filter { $0.hasPrefix("#STPD_") }.map { $0.dropFirst() }.joined(separator: "\n")
        let path = directory.appendingPathComponent("stpd.conf").path
        try TrustedFiles.write(uncommented, to: path)
        let home = ["XDG_CONFIG_HOME": directory.appendingPathComponent("none").path, "HOME": directory.path]
        let fromFile = try DaemonConfiguration.resolve(
            flags: ["STPD_STRICT_CONFIG": "1"], environment: home, configFile: path)
        let defaults = try DaemonConfiguration.resolve(flags: ["STPD_STRICT_CONFIG": "1"], environment: home)
        #expect(fromFile.warnings.isEmpty)
        for setting in ConfigurationKeys.all where setting.key != "STPD_CONFIG" {
            #expect(setting.current(fromFile) == setting.current(defaults), "\(setting.key)")
        }
    }

    @Test func theManualPageHasEverySettingAndNoStrayControlLines() {
        let page = ConfigurationKeys.configManualPage(version: "9.9.9")
        #expect(page.hasPrefix(".TH STPD.CONF 5 \"\" \"stpd 9.9.9\""))
        for setting in ConfigurationKeys.all {
            #expect(page.contains(".B \(ConfigurationKeys.roff(setting.key))\n"), "\(setting.key)")
        }
        let known: Set<Substring> = [".TH", ".SH", ".TP", ".B", ".BR", ".I", ".IR", ".IB", ".br", ".PP"]
        for line in page.split(separator: "\n") where line.hasPrefix(".") || line.hasPrefix("'") {
            #expect(known.contains(line.split(separator: " ")[0]), "\(line)")
        }
        #expect(!page.contains("`"))
    }

    @Test func roffEscapesWhatGroffWouldRead() {
        #expect(ConfigurationKeys.roff("`--socket` a\\b") == "\\fB\\-\\-socket\\fR a\\eb")
        #expect(ConfigurationKeys.roff(".hidden") == "\\&.hidden")
        #expect(ConfigurationKeys.roff("sk_…") == "sk_...")
    }
}

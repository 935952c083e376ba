import Foundation
import Testing

@testable import StpdDaemon

/// Issue 24.2: a config file (or a file it names) that anyone but root and stpd's user can
/// change stops the start, as OpenSSH does with its files. Cases that need another owner chown
/// to uid 1001 and run only as root.
@Suite final class FileTrustTests {
    let directory: String
    static let other: uid_t = 1001

    init() throws {
        directory = try TrustedFiles.directory("stpd-trust").path
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func file(_ name: String, _ text: String = "STPD_DEBUG_METHODS=1\n", mode: mode_t = 0o644) throws -> String {
        let path = "\(directory)/\(name)"
        try TrustedFiles.write(text, to: path, mode: mode)
        return path
    }

    func refusal(config: String, flags: [String: String] = [:]) -> String? {
        do {
            _ = try DaemonConfiguration.resolve(flags: flags, environment: ["HOME": directory], configFile: config)
            return nil
        } catch {
            return "\(error)"
        }
    }

    static var isRoot: Bool { geteuid() == 0 }

    @Test func aFileOnlyRootOrStpdCanChangeIsRead() throws {
        #expect(refusal(config: try file("good.conf")) == nil)
        #expect(refusal(config: "/dev/null") == nil, "a device is judged by its owner: root")
        // A sticky directory (like /tmp): nobody can replace what is not theirs.
        let sticky = "\(directory)/sticky"
        try TrustedFiles.make(directoryAt: sticky)
        chmod(sticky, 0o1777)
        #expect(refusal(config: try file("sticky/ok.conf")) == nil)
    }

    @Test func aFileOthersMayWriteIsRefused() throws {
        let message = try #require(refusal(config: try file("open.conf", mode: 0o666)))
        #expect(message.contains("refusing the config file") && message.contains("mode 0666 lets any user change it"))
        let group = try #require(refusal(config: try file("group.conf", mode: 0o664)))
        #expect(group.contains("lets its group change it"))
    }

    @Test func aFileInADirectoryOthersMayWriteIsRefused() throws {
        let open = "\(directory)/open"
        try TrustedFiles.make(directoryAt: open)
        chmod(open, 0o777)
        let message = try #require(refusal(config: try file("open/stpd.conf")))
        #expect(message.contains("it is in \(open), whose mode 0777 lets any user replace it"))
    }

    @Test(.enabled(if: isRoot)) func aFileOfAnotherUserIsRefused() throws {
        let path = try file("theirs.conf")
        chown(path, Self.other, Self.other)
        let message = try #require(refusal(config: path))
        #expect(message.contains("belongs to uid 1001"))
    }

    @Test(.enabled(if: isRoot)) func aFileReachedThroughAnotherUsersLinkIsRefused() throws {
        let target = try file("real.conf")
        let link = "\(directory)/link.conf"
        symlink(target, link)
        lchown(link, Self.other, Self.other)
        let message = try #require(refusal(config: link))
        #expect(message.contains("reached through the symbolic link \(link), which belongs to uid 1001"))
        // The same link of root's own is followed.
        lchown(link, 0, 0)
        #expect(refusal(config: link) == nil)
    }

    @Test func aKeyFileOthersMayWriteIsRefused() throws {
        let key = try file("stripe-key", "sk_test_\(String(repeating: "a", count: 24))\n", mode: 0o622)
        let config = try file("key.conf", "")
        let message = try #require(refusal(config: config, flags: ["STPD_STRIPE_KEY_FILE": key]))
        #expect(message.contains("refusing the Stripe key file \(key)"))
        chmod(key, 0o600)
        #expect(refusal(config: config, flags: ["STPD_STRIPE_KEY_FILE": key]) == nil)
    }
}

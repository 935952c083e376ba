import Foundation
import Testing

@testable import StpdDaemon

/// The SDK always sends `companyName` (default: the app's bundle name) as `redirect_merchant_name`;
/// without a configured name stpd uses the calling process's name.
@Suite struct PeerProcessNameTests {
    @Test func theDefaultMerchantNameIsTheCallingProcessName() throws {
        let comm = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(PeerProcessName.of(pid: getpid()) == comm)
        #expect(!comm.isEmpty)
    }

    @Test func aProcessThatIsGoneHasNoName() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("7"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("shop-app\n".utf8).write(to: root.appendingPathComponent("7/comm"))
        #expect(PeerProcessName.of(pid: 7, procRoot: root.path) == "shop-app")
        #expect(PeerProcessName.of(pid: 8, procRoot: root.path) == nil)
        #expect(PeerProcessName.of(pid: 0) == nil)
    }
}

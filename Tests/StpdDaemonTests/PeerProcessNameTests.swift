import Foundation
import StpdCore
import Testing

@testable import StpdDaemon

/// The SDK names the merchant by the app's display name unless told otherwise; stpd's default is the
/// calling app's name as a customer would know it: its program's, or for an interpreter the script's.
@Suite struct PeerProcessNameTests {
    @Test(arguments: [
        (["/usr/bin/python3", "/opt/shop/kiosk.py"], "kiosk"),
        (["python3.12", "-u", "-W", "ignore", "till.py", "--port", "80"], "till"),
        (["python3", "-m", "myshop.kiosk"], "myshop.kiosk"),
        (["/usr/local/bin/node", "--require", "dotenv/config", "/srv/checkout/server.mjs"], "server"),
        (["deno", "run", "--allow-net", "shop.ts"], "shop"),
        (["java", "-Xmx64m", "-jar", "/opt/pos/point-of-sale.jar"], "point-of-sale"),
        (["java", "-cp", "lib/*", "com.example.shop.Till"], "Till"),
        (["bash", "/usr/lib/kiosk/start-checkout.sh"], "start-checkout"),
        (["/opt/Northwind Traders/northwind-checkout-desktop", "--kiosk"], "northwind-checkout-desktop"),
        (["ruby", "-I", "lib", "--", "store.rb"], "store"),
    ])
    func theNameIsTheAppsNotItsInterpreters(arguments: [String], name: String) {
        #expect(PeerProcessName.name(fromArguments: arguments) == name)
    }

    @Test func anInterpreterWithoutAScriptHasNoName() {
        #expect(PeerProcessName.name(fromArguments: ["python3", "-c", "print(1)"]) == nil)
        #expect(PeerProcessName.name(fromArguments: ["node"]) == nil)
        #expect(PeerProcessName.name(fromArguments: ["node", "-e", "1"]) == nil)
        #expect(PeerProcessName.name(fromArguments: []) == nil)
    }

    @Test func theCallsNameWinsThenTheConfiguredOneThenTheApps() throws {
        let own = PeerProcessName.of(pid: getpid())
        #expect(own != nil && own == PeerProcessName.name(fromArguments: CommandLine.arguments))
        let caller = Caller(uid: getuid(), pid: getpid())
        #expect(MerchantName.resolve(given: "Shop & Co", configured: "Config Shop", caller: caller) == "Shop & Co")
        #expect(MerchantName.resolve(given: nil, configured: "Config Shop", caller: caller) == "Config Shop")
        #expect(MerchantName.resolve(given: nil, configured: nil, caller: caller) == own)
        #expect(MerchantName.resolve(given: nil, configured: nil, caller: Caller(uid: 0)) == nil)
    }

    @Test func aProcessThatIsGoneHasNoName() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("7"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("python3\0/home/ann/corner-bakery-till.py\0".utf8).write(to: root.appendingPathComponent("7/cmdline"))
        #expect(PeerProcessName.of(pid: 7, procRoot: root.path) == "corner-bakery-till")
        #expect(PeerProcessName.of(pid: 8, procRoot: root.path) == nil)
        #expect(PeerProcessName.of(pid: 0) == nil)
    }
}

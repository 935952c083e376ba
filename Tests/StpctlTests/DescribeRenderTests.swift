import Foundation
import JSONRPC
import StpctlKit
import Testing

/// `stpctl describe`, rendered from the committed contract (what `rpc.discover` serves).
@Suite struct DescribeRenderTests {
    let document: JSONValue = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try! Data(contentsOf: root.appendingPathComponent("proto/stpd.openrpc.json"))
        return try! JSONCoding.decode(JSONValue.self, from: data)
    }()

    @Test func aMethodWithParamsAResultComponentAndErrors() throws {
        let text = try DescribeRender.describe("source.poll", in: document)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0].hasPrefix("source.poll: Starts polling a Source"))
        #expect(lines.contains("  id (string, required): A Stripe Source id"))
        #expect(lines.contains("  timeout (number, optional): Seconds (default and maximum 300)"))
        #expect(lines.contains("result: Source"))
        #expect(lines.contains { $0.hasPrefix("  status (") })  // the component's members, resolved
        #expect(lines.contains("  1001 NotFound: No such object"))
    }

    @Test func aMethodWithoutParamsOrErrors() throws {
        let text = try DescribeRender.describe("daemon.ping", in: document)
        #expect(text.contains("params:\n  (none)"))
        #expect(text.contains("result: DaemonPingResult\n  pong (true)\n  version (string): stpd's version"))
        #expect(text.contains("errors:\n  (none declared"))
    }

    @Test func anUnknownMethodIsAUsageErrorNamingLikeOnes() {
        #expect(throws: StpctlFailure.self) { try DescribeRender.describe("nope", in: document) }
        do {
            _ = try DescribeRender.describe("poll", in: document)
            Issue.record("no error")
        } catch {
            #expect(error.exitStatus == .usage)
            #expect(error.description.contains("did you mean source.poll, source.stopPolling?"))
        }
    }
}

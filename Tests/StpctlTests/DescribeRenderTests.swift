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
            #expect(error.description.contains("source.poll, source.stopPolling?"))
        }
    }

    @Test func withoutAMethodTheMethodsByKind() throws {
        let text = DescribeRender.overview(of: document)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let methods = document["methods"]?.arrayValue ?? []
        #expect(lines[0] == "\(methods.count) methods by kind (stpctl describe METHOD tells more)")
        // Each kind is a heading line, its methods indented under it with their summaries.
        let source = try #require(lines.firstIndex(of: "source"))
        #expect(lines[source - 1] == "")
        #expect(lines[source + 1].hasPrefix("  source.create  "))
        let kinds = DescribeRender.kinds(in: document)
        #expect(kinds.map(\.kind).contains("paymentContext"))
        #expect(kinds.reduce(0) { $0 + $1.methods.count } == methods.count)
        for method in methods {
            let name = try #require(method["name"]?.stringValue)
            let summary = try #require(method["summary"]?.stringValue)
            #expect(lines.contains { $0.hasPrefix("  \(name) ") && $0.hasSuffix(summary) }, "\(name) is listed")
        }
    }
}

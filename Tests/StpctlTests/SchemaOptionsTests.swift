import Foundation
import JSONRPC
import StpctlKit
import Testing

/// `source create TYPE`'s options, read from a constructor's schema in the committed contract.
@Suite struct SchemaOptionsTests {
    static let document: JSONValue = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let data = try! Data(contentsOf: root.appendingPathComponent("proto/stpd.openrpc.json"))
        return try! JSONCoding.decode(JSONValue.self, from: data)
    }()

    /// The schema of one member of `source.create`'s `params`.
    static func constructor(_ member: String) -> SchemaOptions {
        let definitions = document["components"]?["schemas"]?.objectValue ?? [:]
        let create = document["methods"]?.arrayValue?.first { $0["name"] == "source.create" }
        let params = create?["params"]?.arrayValue?.first { $0["name"] == "params" }?["schema"] ?? [:]
        return SchemaOptions(JSONSchema(params["properties"]?[member] ?? [:]), definitions: definitions)
    }

    @Test(arguments: [
        ("expMonth", "exp-month"), ("returnURL", "return-url"), ("threeDSecure", "three-d-secure"),
        ("addressLine1", "address-line1"), ("appBundleId", "app-bundle-id"), ("p24", "p24"), ("card", "card"),
    ])
    func kebab(_ member: String, _ option: String) {
        #expect(SchemaOptions.kebab(member) == option)
    }

    @Test func theOptionsOfSofortAreItsMembers() {
        let sofort = Self.constructor("sofort")
        #expect(
            sofort.options.map(\.name) == ["--amount", "--country", "--return-url", "--statement-descriptor"])
        #expect(sofort.options.filter(\.required).map(\.name) == ["--amount", "--country", "--return-url"])
        let help = sofort.help()
        #expect(help.hasPrefix("  --amount <integer>"))
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= 79 })
    }

    @Test func argumentsBecomeTypedMembers() throws {
        let card = try Self.constructor("card").parse([
            "--number", "4242424242424242", "--exp-month=12", "--exp-year", "2030", "--address-line1", "1 Main St",
        ])
        #expect(card == ["number": "4242424242424242", "expMonth": 12, "expYear": 2030, "addressLine1": "1 Main St"])
    }

    @Test func badArgumentsAreNamed() {
        let sofort = Self.constructor("sofort")
        func error(_ arguments: [String]) -> String? {
            do {
                _ = try sofort.parse(arguments)
                return nil
            } catch { return error.description }
        }
        let base = ["--country", "DE", "--return-url", "app://x"]
        #expect(error(base) == "missing --amount")
        #expect(error(base + ["--amount", "ten"]) == "--amount takes a whole number, not 'ten'")
        #expect(error(base + ["--amount", "0"]) == "--amount must be at least 1")
        #expect(error(base + ["--amount", "1", "--bank", "ing"]) == "unknown option '--bank'")
        #expect(error(base + ["--amount", "1", "--country", "AT"]) == "--country is given twice")
        #expect(error(base + ["--amount"]) == "--amount needs a value")
        #expect(error(base + ["1099"]) == "unexpected argument '1099'")
        #expect(error(base + ["--amount", "1"]) == nil)
    }
}

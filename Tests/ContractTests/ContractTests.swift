import Foundation
import JSONRPC
import Logging
import StpdCore
import StpdProtocol
import StpdStore
import TestSupport
import Testing

@testable import StpdDaemon

// The contract is derived from the method declarations; clients read the committed file.
// These tests keep declarations, committed document, and the daemon's router in lock-step.

/// The package root, found from this file's path (Tests/ContractTests/ContractTests.swift).
private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
private let committedPath = packageRoot.appendingPathComponent("proto/stpd.openrpc.json").path

/// Every `$ref` string anywhere in `value`, with where it was found.
private func references(in value: JSONValue, at path: String = "#") -> [(ref: String, at: String)] {
    switch value {
    case .object(let members):
        return members.sorted { $0.key < $1.key }.flatMap { key, member -> [(ref: String, at: String)] in
            if key == "$ref", case .string(let ref) = member { return [(ref, path)] }
            return references(in: member, at: "\(path)/\(key)")
        }
    case .array(let items):
        return items.enumerated().flatMap { references(in: $1, at: "\(path)/\($0)") }
    default:
        return []
    }
}

/// Resolves a local JSON pointer (`#/components/schemas/Name`) in `document`.
private func resolve(_ pointer: String, in document: JSONValue) -> JSONValue? {
    guard pointer.hasPrefix("#/") else { return nil }
    var current: JSONValue? = document
    for token in pointer.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
        let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        switch current {
        case .object(let members)?: current = members[key]
        case .array(let items)?: current = Int(key).flatMap { items.indices.contains($0) ? items[$0] : nil }
        default: return nil
        }
    }
    return current
}

@Suite struct ContractDocumentTests {
    @Test func committedDocumentIsUpToDate() throws {
        let committed = try #require(
            FileManager.default.contents(atPath: committedPath), "missing \(committedPath); run `make contract`")
        let rendered = try Contract.renderedDocument()
        #expect(committed == rendered, "proto/stpd.openrpc.json is stale: run `make contract` and commit the result")
    }

    @Test func committedDocumentParsesToTheSameValue() throws {
        let committed = try JSONCoding.decode(
            JSONValue.self, from: try #require(FileManager.default.contents(atPath: committedPath)))
        // Compared after the same round trip, so 0 and 0.0 do not differ only in representation.
        let expected = try JSONCoding.value(of: Contract.document)
        #expect(committed == expected)
    }

    @Test func methodsMatchTheDeclarationsBothWays() throws {
        let listed = try #require(Contract.document["methods"]?.arrayValue).compactMap { $0["name"]?.stringValue }
        let declared = StpdAPI.methods.map { $0.name }
        #expect(Set(listed) == Set(declared))
        #expect(listed.count == Set(listed).count, "no method is listed twice")
        #expect(declared.count == Set(declared).count, "no method is declared twice")
    }

    @Test func everyReferenceResolves() throws {
        let document = Contract.document
        let refs = references(in: document)
        #expect(!refs.isEmpty)
        for (ref, at) in refs {
            #expect(resolve(ref, in: document) != nil, "\(ref) at \(at) does not resolve")
        }
    }

    @Test func everyListedErrorIsDeclared() throws {
        let errors = try #require(Contract.document["components"]?["errors"]?.objectValue)
        let declared = Set(StpdErrors.all.map(\.name))
        #expect(Set(errors.keys) == declared)
        for method in StpdAPI.methods {
            for error in method.errors {
                #expect(declared.contains(error.name), "\(method.name) lists undeclared error \(error.name)")
            }
        }
        for entry in try #require(Contract.document["methods"]?.arrayValue) {
            for error in entry["errors"]?.arrayValue ?? [] {
                let ref = try #require(error["$ref"]?.stringValue, "method errors are references")
                #expect(ref.hasPrefix("#/components/errors/"))
            }
        }
    }

    @Test func errorCodesAreApplicationCodesAndUnique() {
        let codes = StpdErrors.all.map(\.code)
        for error in StpdErrors.all {
            #expect(!(-32768 ... -32000).contains(error.code), "\(error.name) uses reserved code \(error.code)")
            #expect(!error.message.isEmpty && !error.description.isEmpty)
        }
        #expect(codes.count == Set(codes).count, "error codes are unique: \(codes.sorted())")
        #expect(StpdErrors.all.count == Set(StpdErrors.all.map(\.name)).count, "error names are unique")
        #expect(codes == codes.sorted(), "StpdErrors.all is in code order")
    }

    @Test func everyParamsSchemaIsAnObjectSchema() {
        for method in StpdAPI.methods {
            let schema = method.paramsSchema.json
            #expect(schema["type"] == "object", "\(method.name)'s params are not an object schema")
            #expect(schema["properties"]?.objectValue != nil, "\(method.name)'s params schema has no properties")
            // Unknown parameters must be reported, not ignored (a typo would pass silently).
            #expect(schema["additionalProperties"] == false, "\(method.name) accepts unknown parameters")
        }
    }

    @Test func everyMethodIsDescribedByName() throws {
        for entry in try #require(Contract.document["methods"]?.arrayValue) {
            let name = entry["name"]?.stringValue ?? "?"
            #expect(entry["paramStructure"] == "by-name", "\(name)")
            #expect(entry["summary"]?.stringValue?.isEmpty == false, "\(name) has a summary")
            #expect(entry["result"]?["schema"] != nil, "\(name) has a result schema")
        }
    }

    @Test func namedSchemasAreReferencedAndNotificationsAreObjects() throws {
        let refs = Set(references(in: Contract.document).map(\.ref))
        for name in StpdAPI.schemas.keys {
            #expect(refs.contains("#/components/schemas/\(name)"), "schema \(name) is never used")
        }
        for notification in Notifications.all {
            #expect(notification.paramsSchema.json["type"] == "object", "\(notification.method)")
        }
    }

    /// What generators rely on: every component titled with its name, every result a reference to
    /// one (an inline result is hoisted under its shared type's name or `<Method>Result`), and
    /// `info.version` the protocol's, not the daemon's.
    @Test func componentsAreTitledAndResultsReferToThem() throws {
        let schemas = try #require(Contract.document["components"]?["schemas"]?.objectValue)
        for (name, schema) in schemas {
            #expect(schema["title"] == .string(name), "component \(name) has no title")
        }
        for entry in try #require(Contract.document["methods"]?.arrayValue) {
            let ref = entry["result"]?["schema"]?["$ref"]?.stringValue ?? ""
            #expect(ref.hasPrefix("#/components/schemas/"), "\(entry["name"]?.stringValue ?? "?") has an inline result")
            #expect(schemas[String(ref.dropFirst("#/components/schemas/".count))] != nil, "\(ref)")
        }
        #expect(Contract.resultComponentName(Ping.self) == "DaemonPingResult")
        #expect(Contract.resultComponentName(HandleURL.self) == "HandleUrlResult")
        #expect(Contract.resultComponentName(SourceCreate.self) == "SourceResult")
        #expect(Contract.resultComponentName(SourceRetrieve.self) == "SourceResult")
        #expect(Contract.document["info"]?["version"] == .string(StpdAPI.protocolVersion))
    }

    /// Event types are listed once each, named `kind.event`, and each says what its object is.
    @Test func eventTypesAreUniqueAndDescribeTheirObject() {
        let types = EventTypes.all.map(\.type)
        #expect(Set(types).count == types.count)
        for event in EventTypes.all {
            #expect(event.type.split(separator: ".").count == 2, "\(event.type)")
            #expect(event.object.json["type"] == "object" || event.object.json["$ref"] != nil, "\(event.type)")
        }
        let listed = Contract.document["x-event-types"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(listed == types)
    }
}

@Suite struct DaemonRouterTests {
    /// The router the daemon serves with covers exactly the declared methods: nothing declared
    /// is left unanswered, nothing is answered that the contract does not list. Built through
    /// `Daemon.makeRouter` (internal, hence `@testable`) with the same parts `Daemon.run` uses.
    @Test(arguments: [false, true])
    func routerRegistersExactlyTheDeclaredMethods(debugMethods: Bool) async throws {
        let directory = try TemporaryDirectory(prefix: "stpd-contract")
        defer { directory.remove() }
        let store = try SQLiteStateStore(path: directory.appending("stpd.sqlite"))
        let log = try await EventLog(store: store, views: WireViews())
        var configuration = DaemonConfiguration(stateDirectory: directory.path)
        configuration.debugMethods = debugMethods
        let stripe = StripeSetup(configuration: configuration, logger: Logger(label: "test"))  // no key: no HTTP client
        let parts = Daemon.Parts(
            configuration: configuration, log: log, store: .sqlite(store), stripe: stripe, activity: Activity(),
            background: BackgroundWork(), logger: Logger(label: "test"))
        let facts = ProcessFacts(
            activation: .bound, socketPath: directory.appending("s.sock"), stateDirectory: directory.path)
        let router = Daemon.makeRouter(facts: facts, parts: parts, configuration: configuration)
        #expect(router.methodNames == Set(StpdAPI.methods.map { $0.name }))
    }
}

/// Every `pattern` in the contract, walked with a sample it matches and that sample with a line
/// terminator after it (or before it): NSRegularExpression's `$` matches before a last `\n`, so
/// `pm_card_visa\n` or a client secret with a newline once passed. Samples are made from the
/// pattern itself, so a pattern added later is walked too.
@Suite struct ContractPatternTests {
    static let patterns: [String] = {
        var found = Set<String>()
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let members):
                if case .string(let pattern)? = members["pattern"] { found.insert(pattern) }
                for member in members.values { walk(member) }
            case .array(let items): for item in items { walk(item) }
            default: break
            }
        }
        walk(Contract.document)
        return found.sorted()
    }()

    @Test func theContractHasPatterns() { #expect(Self.patterns.count >= 20) }

    @Test(arguments: Self.patterns)
    func everyPatternRefusesALineTerminatorAtEitherEnd(_ pattern: String) throws {
        let schema = JSONSchema(["type": "string", "pattern": .string(pattern)])
        let validator = SchemaValidator()
        let sample = try #require(PatternSample.make(pattern), "no sample for \(pattern)")
        #expect(throws: Never.self, "\(sample) must match \(pattern)") {
            try validator.validate(.string(sample), against: schema)
        }
        for terminator in ["\n", "\r\n", "\r", "\u{2028}", "\u{2029}", "\u{85}"] {
            for text in [sample + terminator, terminator + sample] {
                #expect(throws: SchemaValidator.Failure.self, "\(text.debugDescription) for \(pattern)") {
                    try validator.validate(.string(text), against: schema)
                }
            }
        }
    }
}

/// The shortest string a pattern of the contract's subset matches: anchors, literals and `\`
/// escapes, `[...]` classes (their first character), groups with `|` (their first branch), and
/// the quantifiers `{n}`, `{n,m}`, `+`, `*`, `?` (their least count, one for `+`).
enum PatternSample {
    static func make(_ pattern: String) -> String? {
        var chars = Array(pattern)[...]
        return sequence(&chars, inGroup: false)
    }

    private static func sequence(_ p: inout ArraySlice<Character>, inGroup: Bool) -> String? {
        var out = ""
        while let c = p.first {
            if inGroup, c == ")" || c == "|" { break }
            p.removeFirst()
            var atom: String
            switch c {
            case "^", "$": continue
            case "\\":
                guard let escaped = p.popFirst() else { return nil }
                atom = String(escaped)
            case "[":
                guard let first = p.popFirst(), first != "^" else { return nil }
                while let next = p.popFirst(), next != "]" {}
                atom = String(first)
            case "(":
                if p.starts(with: ["?", ":"]) { p.removeFirst(2) }
                guard let branch = sequence(&p, inGroup: true) else { return nil }
                // The other branches are skipped, nested groups included.
                var depth = 0
                while let next = p.popFirst() {
                    if next == "(" {
                        depth += 1
                    } else if next == ")" {
                        if depth == 0 { break }
                        depth -= 1
                    } else if next == "\\" {
                        p.removeFirst()
                    }
                }
                atom = branch
            default:
                atom = String(c)
            }
            out += String(repeating: atom, count: quantity(&p))
        }
        return out
    }

    private static func quantity(_ p: inout ArraySlice<Character>) -> Int {
        switch p.first {
        case "+":
            p.removeFirst()
            return 1
        case "*", "?":
            p.removeFirst()
            return 0
        case "{":
            p.removeFirst()
            var digits = ""
            while let next = p.popFirst(), next != "}" { digits.append(next) }
            return Int(digits.split(separator: ",").first ?? "1") ?? 1
        default: return 1
        }
    }
}

import JSONRPC

/// `stpctl describe METHOD`: one method of the OpenRPC document (`rpc.discover`) for a person, as
/// `lightning-cli help` and `varlinkctl introspect` do: summary, params, result and errors.
/// Without a method, the methods by kind.
public enum DescribeRender {
    /// The methods grouped by kind (the part of the name before the dot: `source`, `redirect`;
    /// a name without one is a kind of its own), kinds and methods in the document's order.
    public static func kinds(in document: JSONValue) -> [(kind: String, methods: [(name: String, summary: String)])] {
        var kinds: [(kind: String, methods: [(name: String, summary: String)])] = []
        for method in document["methods"]?.arrayValue ?? [] {
            let name = method["name"]?.stringValue ?? "?"
            let kind = String(name.prefix { $0 != "." })
            let entry = (name, method["summary"]?.stringValue ?? "")
            if let index = kinds.firstIndex(where: { $0.kind == kind }) {
                kinds[index].methods.append(entry)
            } else {
                kinds.append((kind, [entry]))
            }
        }
        return kinds
    }

    /// `stpctl describe` without a method: each kind, then its methods with their summaries.
    public static func overview(of document: JSONValue) -> String {
        let kinds = kinds(in: document)
        let count = kinds.reduce(0) { $0 + $1.methods.count }
        var lines = ["\(count) methods by kind (stpctl describe METHOD tells more)"]
        for (kind, methods) in kinds {
            lines += ["", kind, Render.indent(Render.columns(methods.map { ($0.name, $0.summary) }))]
        }
        return lines.joined(separator: "\n")
    }

    /// The method named `name` in `document`, rendered; a usage error (status 2) when the document
    /// lists none, naming the methods whose names contain it.
    public static func describe(_ name: String, in document: JSONValue) throws(StpctlFailure) -> String {
        let methods = document["methods"]?.arrayValue ?? []
        guard let method = methods.first(where: { $0["name"]?.stringValue == name }) else {
            let names = methods.compactMap { $0["name"]?.stringValue }
            let similar = names.filter { $0.lowercased().contains(name.lowercased()) }.sorted()
            let hint =
                similar.isEmpty ? "stpctl discover lists them" : "did you mean \(similar.joined(separator: ", "))?"
            throw StpctlFailure.usage("the daemon has no method \(name): \(hint)")
        }
        var lines = ["\(name): \(method["summary"]?.stringValue ?? "")"]
        if method["deprecated"] == .bool(true) {
            lines.append("DEPRECATED: still served, removed in the next major version of the protocol")
        }
        if let description = method["description"]?.stringValue { lines += ["", description] }
        lines += ["", "params:"]
        let params = method["params"]?.arrayValue ?? []
        if params.isEmpty { lines.append("  (none)") }
        lines += params.map { param in
            let required = param["required"] == .bool(true) ? "required" : "optional"
            let schema = param["schema"] ?? .object([:])
            var text = "  \(param["name"]?.stringValue ?? "?") (\(type(of: schema)), \(required))"
            if let summary = param["summary"]?.stringValue ?? schema["description"]?.stringValue {
                text += ": \(summary)"
            }
            return text
        }
        let result = method["result"]?["schema"] ?? .object([:])
        lines += ["", "result: \(type(of: result))"]
        lines += members(of: resolve(result, in: document)).map { "  " + $0 }
        let errors = method["errors"]?.arrayValue ?? []
        lines += ["", "errors:"]
        if errors.isEmpty { lines.append("  (none declared; JSON-RPC's own codes may still occur)") }
        lines += errors.map { error in
            let name = referencedName(error) ?? "?"
            let resolved = resolve(error, in: document)
            let code = resolved["code"].map(Render.scalar) ?? "?"
            return "  \(code) \(name): \(resolved["message"]?.stringValue ?? "")"
        }
        return lines.joined(separator: "\n")
    }

    /// A short type: a component's name, `string`, `integer >= 1`, `"a" | "b"`, `[Event]`.
    static func type(of schema: JSONValue) -> String {
        if let name = referencedName(schema) { return name }
        if let constant = schema["const"] { return Render.json(constant, pretty: false) }
        if let choices = schema["enum"]?.arrayValue {
            return choices.map { Render.json($0, pretty: false) }.joined(separator: " | ")
        }
        for combinator in ["oneOf", "anyOf"] {
            if let variants = schema[combinator]?.arrayValue { return variants.map(type(of:)).joined(separator: " | ") }
        }
        switch schema["type"] {
        case .string("array")?: return "[\(type(of: schema["items"] ?? .object([:])))]"
        case .string(let name)?: return name
        case .array(let names)?: return names.compactMap(\.stringValue).joined(separator: " | ")
        default: return schema["properties"] == nil ? "any" : "object"
        }
    }

    /// An object's members as `name (type, required): description` lines.
    static func members(of schema: JSONValue) -> [String] {
        guard let properties = schema["properties"]?.objectValue else { return [] }
        let required = Set(schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        return properties.keys.sorted().map { key in
            let member = properties[key]!
            var text = "\(key) (\(type(of: member))\(required.contains(key) ? "" : ", optional"))"
            if let description = member["description"]?.stringValue { text += ": \(description)" }
            return text
        }
    }

    /// `X` for `{"$ref": "#/components/<kind>/X"}`.
    static func referencedName(_ schema: JSONValue) -> String? {
        guard let ref = schema["$ref"]?.stringValue, ref.hasPrefix("#/components/") else { return nil }
        return ref.split(separator: "/").last.map(String.init)
    }

    /// Follows a local `$ref` (`#/a/b`) to what it names; anything else as it is.
    static func resolve(_ value: JSONValue, in document: JSONValue) -> JSONValue {
        guard let ref = value["$ref"]?.stringValue, ref.hasPrefix("#/") else { return value }
        var node: JSONValue? = document
        for token in ref.dropFirst(2).split(separator: "/") { node = node?[String(token)] }
        return node ?? value
    }
}

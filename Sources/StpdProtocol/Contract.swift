import Foundation
import JSONRPC

/// Builds the OpenRPC document from the declarations. `proto/stpd.openrpc.json` is this
/// document written out (`stpd --print-contract`); a test keeps the two identical.
public enum Contract {
    public static var document: JSONValue {
        var root: [String: JSONValue] = [
            "openrpc": "1.3.2",
            "info": [
                "title": "stpd",
                // The protocol's version, not the daemon's (docs/protocol.md, "Compatibility").
                "version": .string(StpdAPI.protocolVersion),
                "description": .string(overview),
                "license": ["name": "MIT"],
            ],
            "methods": .array(StpdAPI.methods.map(describe)),
            "components": [
                "schemas": .object(componentSchemas),
                "errors": .object(Dictionary(uniqueKeysWithValues: StpdErrors.all.map { ($0.name, describe($0)) })),
            ],
        ]
        root["x-notifications"] = .array(Notifications.all.map(describe))
        root["x-event-types"] = .array(EventTypes.all.map(describe))
        return .object(root)
    }

    /// The named schemas and the results hoisted out of the methods, each with a `title` (its
    /// name), so that a generator names every type the same way.
    static var componentSchemas: [String: JSONValue] {
        var schemas = StpdAPI.schemas.mapValues(\.json)
        for (name, schema) in resultComponents {
            precondition(schemas[name] == nil || schemas[name] == schema.json, "two results named \(name)")
            schemas[name] = schema.json
        }
        for (name, schema) in schemas {
            guard case .object(var members) = schema, members["title"] == nil else { continue }
            members["title"] = .string(name)
            schemas[name] = .object(members)
        }
        return schemas
    }

    /// A method's result as the document gives it: a reference to a component, never an inline
    /// schema (which generators would each name their own way).
    static func resultReference(_ method: any RPCMethod.Type) -> JSONValue {
        if method.resultSchema.json["$ref"] != nil { return method.resultSchema.json }
        return ["$ref": .string("#/components/schemas/\(resultComponentName(method))")]
    }

    /// Inline results become components: named after their Swift type when methods share it
    /// (`SourceResult`), else after the method (`daemon.ping` -> `DaemonPingResult`).
    static var resultComponents: [(name: String, schema: JSONSchema)] {
        StpdAPI.methods.filter { $0.resultSchema.json["$ref"] == nil }.map {
            (resultComponentName($0), $0.resultSchema)
        }
    }

    public static func resultComponentName(_ method: any RPCMethod.Type) -> String {
        let typeName = method.resultTypeName
        guard typeName == "Result" || typeName == "JSONValue" else { return typeName }
        let words = method.name.split(whereSeparator: { ".-_".contains($0) })
        return words.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Result"
    }

    /// The document as committed: pretty, sorted keys, trailing newline.
    public static func renderedDocument() throws -> Data {
        var data = try JSONCoding.encode(document, pretty: true)
        data.append(UInt8(ascii: "\n"))
        return data
    }

    static let overview = """
        JSON-RPC 2.0 over a Unix domain socket: one compact JSON text per line (\\n), UTF-8. \
        Requests may be pipelined and are answered out of order; batches follow the JSON-RPC 2.0 \
        specification. Params are passed by name; every string in them (member names too) is at most \
        STPD_MAX_STRING_BYTES of UTF-8 (16 KiB by default), and a longer one gets -32602 naming the \
        parameter with data.maxBytes. Application errors use the codes listed under \
        components/errors: 1xxx requests against the daemon's objects, 2xxx events and \
        subscriptions, 3xxx Stripe API errors, 4xxx sources, polls and redirects, 5xxx payment \
        contexts. Server-to-client notifications are listed under x-notifications; the event types \
        their `event` carries, each with the schema of its object, under x-event-types. \
        info.version is the protocol's version, not the daemon's (daemon.ping tells that one): \
        within a major version, methods, members, errors and event types are only added, and a \
        method is deprecated (marked `deprecated`, still served) before a new major version removes it.
        """

    static func describe(_ method: any RPCMethod.Type) -> JSONValue {
        var entry: [String: JSONValue] = [
            "name": .string(method.name),
            "summary": .string(method.summary),
            "paramStructure": "by-name",
            "params": .array(contentDescriptors(method.paramsSchema)),
            "result": ["name": "result", "schema": resultReference(method)],
        ]
        if let description = method.description { entry["description"] = .string(description) }
        // OpenRPC lists params one by one; members that exclude each other (`exactlyOne(of:)`) are a
        // rule across them, kept as the params schema's `oneOf`.
        if let alternatives = method.paramsSchema.json["oneOf"] { entry["x-params-oneOf"] = alternatives }
        if method.deprecated { entry["deprecated"] = true }
        if !method.errors.isEmpty {
            entry["errors"] = .array(method.errors.map { .object(["$ref": .string("#/components/errors/\($0.name)")]) })
        }
        return .object(entry)
    }

    /// OpenRPC lists by-name params one by one; the method's params schema is one object.
    static func contentDescriptors(_ schema: JSONSchema) -> [JSONValue] {
        let properties = schema.json["properties"]?.objectValue ?? [:]
        let required = Set(schema.json["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        return properties.keys.sorted().map { name in
            var descriptor: [String: JSONValue] = [
                "name": .string(name),
                "required": .bool(required.contains(name)),
                "schema": properties[name]!,
            ]
            if let summary = properties[name]?["description"] { descriptor["summary"] = summary }
            return .object(descriptor)
        }
    }

    static func describe(_ error: ErrorDeclaration) -> JSONValue {
        [
            "code": .int(Int64(error.code)), "message": .string(error.message),
            "data": ["description": .string(error.description)],
        ]
    }

    static func describe(_ event: EventTypeDeclaration) -> JSONValue {
        ["name": .string(event.type), "summary": .string(event.summary), "object": event.object.json]
    }

    static func describe(_ notification: NotificationDeclaration) -> JSONValue {
        [
            "name": .string(notification.method),
            "summary": .string(notification.summary),
            "params": notification.paramsSchema.json,
        ]
    }
}

/// A result type that names its contract component itself: a generic one, whose Swift name
/// would carry its arguments (nil: named after the method, as a type declared inside it).
protocol ContractComponent {
    static var componentName: String? { get }
}

extension RPCMethod {
    /// `Result` for a type declared inside the method, else the shared type's own name.
    static var resultTypeName: String {
        if let named = Result.self as? any ContractComponent.Type { return named.componentName ?? "Result" }
        return String(describing: Result.self)
    }
}

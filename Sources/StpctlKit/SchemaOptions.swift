import JSONRPC

/// Command-line options read from an object schema of the contract: `--exp-month 12` for the
/// member `expMonth`, typed as the schema types it, so a command whose options are a schema's
/// members (`source create TYPE`) is declared once, by the schema. Scalar members only.
public struct SchemaOptions: Sendable {
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// One option: the member it fills, its name on the command line, its schema.
    public struct Option: Sendable, Hashable {
        public var member: String
        public var name: String
        public var type: String
        public var description: String
        public var required: Bool
    }

    public let options: [Option]
    private let schema: JSONSchema
    private let validator: SchemaValidator

    /// `schema` is an object schema (a `$ref` is resolved through `definitions`).
    public init(_ schema: JSONSchema, definitions: [String: JSONValue] = [:]) {
        var json = schema.json
        if let ref = json["$ref"]?.stringValue, let name = ref.split(separator: "/").last,
            let target = definitions[String(name)]
        {
            json = target
        }
        let required = Set(json["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        options = (json["properties"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map { member, property in
            Option(
                member: member, name: "--" + Self.kebab(member), type: property["type"]?.stringValue ?? "string",
                description: property["description"]?.stringValue ?? "", required: required.contains(member))
        }
        self.schema = JSONSchema(json)
        validator = SchemaValidator(definitions: definitions)
    }

    /// `expMonth` → `exp-month`, `returnURL` → `return-url`, `threeDSecure` → `three-d-secure`: a
    /// word starts at a capital after a lower-case letter or digit, or at the last capital of a run
    /// followed by a lower-case letter (as ArgumentParser names its options).
    public static func kebab(_ name: String) -> String {
        let characters = Array(name)
        var words: [String] = []
        var word = ""
        for (i, c) in characters.enumerated() {
            let previous = i > 0 ? characters[i - 1] : nil
            let next = i + 1 < characters.count ? characters[i + 1] : nil
            let startsWord =
                c.isUppercase && !word.isEmpty
                && ((previous.map { $0.isLowercase || $0.isNumber } ?? false)
                    || (previous?.isUppercase == true && next?.isLowercase == true))
            if startsWord {
                words.append(word)
                word = ""
            }
            word.append(c)
        }
        words.append(word)
        return words.map { $0.lowercased() }.joined(separator: "-")
    }

    /// `--name value` and `--name=value` pairs as the object the schema describes, checked against it
    /// (a missing, unknown, repeated or ill-typed option is an error naming the option).
    public func parse(_ arguments: [String]) throws(ParseError) -> JSONValue {
        var object: [String: JSONValue] = [:]
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--") else { throw ParseError("unexpected argument '\(argument)'") }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            guard let option = options.first(where: { $0.name == name }) else {
                throw ParseError("unknown option '\(name)'")
            }
            guard object[option.member] == nil else { throw ParseError("\(name) is given twice") }
            guard let text = value ?? rest.popFirst() else { throw ParseError("\(name) needs a value") }
            object[option.member] = try Self.typed(text, option)
        }
        let value = JSONValue.object(object)
        do throws(SchemaValidator.Failure) {
            try validator.validate(value, against: schema)
        } catch {
            let option = options.first { $0.member == error.path.split(separator: ".").first.map(String.init) }
            if let option, error.reason == "is required" { throw ParseError("missing \(option.name)") }
            throw ParseError(option.map { "\($0.name) \(error.reason)" } ?? error.description)
        }
        return value
    }

    private static func typed(_ text: String, _ option: Option) throws(ParseError) -> JSONValue {
        switch option.type {
        case "integer":
            guard let number = Int64(text) else {
                throw ParseError("\(option.name) takes a whole number, not '\(text)'")
            }
            return .int(number)
        case "number":
            guard let number = Double(text), number.isFinite else {
                throw ParseError("\(option.name) takes a number, not '\(text)'")
            }
            return .double(number)
        case "boolean":
            guard let flag = Bool(text) else { throw ParseError("\(option.name) takes true or false, not '\(text)'") }
            return .bool(flag)
        default: return .string(text)
        }
    }

    /// The options for `--help`, required ones first: name and value type, then the description,
    /// wrapped within `width` columns under its own column (ArgumentParser would wrap it flush left).
    public func help(width: Int = 79) -> String {
        let ordered = options.filter(\.required) + options.filter { !$0.required }
        let heads = ordered.map { "  \($0.name) <\($0.type)>" }
        let column = min((heads.map(\.count).max() ?? 0) + 2, width / 2)
        return zip(ordered, heads).map { option, head in
            let text = option.description + (option.required ? " (required)" : "")
            var lines: [String] = []
            var line = head.count < column ? head + String(repeating: " ", count: column - head.count) : head
            if head.count >= column {
                lines.append(line)
                line = String(repeating: " ", count: column)
            }
            var empty = true
            for word in text.split(separator: " ") {
                if !empty, line.count + 1 + word.count > width {
                    lines.append(line)
                    line = String(repeating: " ", count: column)
                    empty = true
                }
                line += (empty ? "" : " ") + word
                empty = false
            }
            lines.append(line)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

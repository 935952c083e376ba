/// Writes JSON text the way every stpd frame looks: compact, object members sorted by name (by
/// their UTF-8 bytes), `/` unescaped, whole doubles without `.0` (as Foundation's encoder
/// writes them). Non-finite doubles, which JSON cannot hold, are written as `null`.
enum JSONWriter {
    static func write(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: flag ? "true".utf8 : "false".utf8)
        case .int(let number): writeInteger(number, to: &out)
        case .double(let number): writeDouble(number, to: &out)
        case .string(let text): writeString(text, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            if members.count < 2 {
                for (name, member) in members { writeMember(name, member, first: true, to: &out) }
            } else {
                let ordered = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                for (index, (name, member)) in ordered.enumerated() {
                    writeMember(name, member, first: index == 0, to: &out)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeMember(_ name: String, _ value: JSONValue, first: Bool, to out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        writeString(name, to: &out)
        out.append(UInt8(ascii: ":"))
        write(value, to: &out)
    }

    static func writeInteger(_ number: Int64, to out: inout [UInt8]) {
        if number >= 0, number < 10 {
            out.append(UInt8(ascii: "0") + UInt8(number))
            return
        }
        out.append(contentsOf: String(number).utf8)
    }

    static func writeDouble(_ number: Double, to out: inout [UInt8]) {
        guard number.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        out.append(contentsOf: text.utf8)
    }

    /// How many bytes `write` writes for `value`.
    static func size(_ value: JSONValue) -> Int {
        switch value {
        case .null: 4
        case .bool(let flag): flag ? 4 : 5
        case .int(let number): number >= 0 && number < 10 ? 1 : String(number).utf8.count
        case .double(let number):
            if !number.isFinite {
                4
            } else {
                number.description.utf8.count - (number.description.hasSuffix(".0") ? 2 : 0)
            }
        case .string(let text): stringSize(text)
        case .array(let elements): 2 + max(elements.count - 1, 0) + elements.reduce(0) { $0 + size($1) }
        case .object(let members):
            2 + max(members.count - 1, 0) + members.reduce(0) { $0 + stringSize($1.key) + 1 + size($1.value) }
        }
    }

    private static func stringSize(_ text: String) -> Int {
        var count = 2
        for byte in text.utf8 {
            switch byte {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C: count += 2
            case 0..<0x20: count += 6
            default: count += 1
            }
        }
        return count
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case 0x22: out.append(contentsOf: #"\""#.utf8)
                case 0x5C: out.append(contentsOf: #"\\"#.utf8)
                case 0x0A: out.append(contentsOf: #"\n"#.utf8)
                case 0x0D: out.append(contentsOf: #"\r"#.utf8)
                case 0x09: out.append(contentsOf: #"\t"#.utf8)
                case 0x08: out.append(contentsOf: #"\b"#.utf8)
                case 0x0C: out.append(contentsOf: #"\f"#.utf8)
                default:
                    out.append(contentsOf: #"\u00"#.utf8)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}

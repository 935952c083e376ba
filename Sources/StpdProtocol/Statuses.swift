import JSONRPC
// The states the domain stores and the contract shows (StpdValues) are part of the contract:
// every user of StpdProtocol sees them.
@_exported import StpdValues

extension JSONSchema {
    /// A string schema listing a status enum's cases.
    static func cases<T: CaseIterable & RawRepresentable<String>>(of _: T.Type, _ description: String) -> JSONSchema {
        .enumeration(T.allCases.map(\.rawValue), description)
    }
}

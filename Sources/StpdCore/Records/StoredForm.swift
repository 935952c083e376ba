import JSONRPC

/// How a record is kept in its row's state: the record as `Codable` makes it, plus its kind's
/// `schemaVersion`, so that a later stpd can tell which form a row holds and upgrade it. The
/// stored form is the domain's own: a change to the wire contract changes no stored byte
/// (`StoredFormTests`), and a database written by the release before opens (`test_state_fixture`).
public enum StoredForm {
    public static let versionKey = "schemaVersion"

    /// The row's state for `record`.
    static func state<R: DurableRecord>(of record: R) throws -> JSONValue {
        let encoded = try JSONCoding.value(of: record)
        guard case .object(var members) = encoded else { return encoded }
        members[versionKey] = .int(Int64(R.schemaVersion))
        return .object(members)
    }

    /// The record in `state`, upgraded first when an older stpd wrote it.
    static func record<R: DurableRecord>(_ type: R.Type, from state: JSONValue) throws -> R {
        let version = Int(state[versionKey]?.intValue ?? 0)
        if version > R.schemaVersion { throw Newer(kind: R.kind, version: version) }
        let current = version == R.schemaVersion ? state : try R.upgrade(state, from: version)
        return try JSONCoding.typed(R.self, from: current)
    }

    /// A row of a form this stpd does not know: a newer stpd (of a fleet being upgraded) wrote it.
    /// It is left as it is, and read as absent here.
    public struct Newer: Error, Sendable, CustomStringConvertible {
        public var kind: ObjectKind
        public var version: Int
        public var description: String { "\(kind.noun) stored in form \(version), newer than this stpd knows" }
    }

    /// A kind's `upgrade` was not taught the step from this version.
    public struct NoUpgrade: Error, Sendable, CustomStringConvertible {
        public var kind: ObjectKind
        public var from: Int
        public var description: String { "no upgrade of a \(kind.noun) from stored form \(from)" }
    }
}

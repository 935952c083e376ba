import Foundation
import JSONRPC
import StpdValues

/// A kind of durable object as the record core (`RecordTable`) keeps it: the stored form (with
/// its secrets), what clients see of it, its events, and what the store derives from it to query
/// it without decoding it.
public protocol DurableRecord: Codable, Sendable {
    associatedtype Event: EventName

    static var kind: ObjectKind { get }
    /// The version of the stored form (what `Codable` makes of the record), kept in each row's
    /// state as `schemaVersion` (`StoredForm`). Rows written before versions (release 0.1.0) read
    /// as version 0, which is version 1 without the member. A change to the stored form bumps it
    /// and teaches `upgrade` the step from the version before.
    static var schemaVersion: Int { get }
    /// A stored state of an older version (`from`) brought to the current form before it is
    /// decoded. The default knows version 0 only.
    static func upgrade(_ state: JSONValue, from version: Int) throws -> JSONValue
    /// The event announcing its removal by the retention sweep; nil: never swept.
    static var removed: Event? { get }

    var id: String { get }
    /// The uid that created it; only that uid (and root) may see or change it.
    var owner: UInt32 { get }
    var createdAt: Date { get }
    var updatedAt: Date { get set }
    /// What its events carry (secrets left out), as `views` shows it (the edge's port).
    func publicState(_ views: any RecordViews) throws -> JSONValue
    /// The same with the view it was encoded from, for a kind whose port method hands one back
    /// (`PublicState`, `Shown`); by default the JSON alone.
    func shown(_ views: any RecordViews) throws -> PublicState

    /// The status lists filter by, if the kind has one.
    var queryStatus: String? { get }
    /// Needs this process's attention (a running poll, a deadline, a follow-up): `restore` loads it.
    var isLive: Bool { get }
    /// Done: the retention sweep removes it once untouched for the retention age.
    var isFinished: Bool { get }
    /// Nothing may happen to it any more (closed, cancelled): a change that would announce an
    /// event is refused with InvalidState, so it never comes back to life.
    var isTerminal: Bool { get }
    /// The lookup keys the store files it under (see `RecordTable.filed(under:for:)`).
    var lookupKeys: [String] { get }
}

extension DurableRecord {
    public static func upgrade(_ state: JSONValue, from version: Int) throws -> JSONValue {
        guard version == 0, schemaVersion == 1 else { throw StoredForm.NoUpgrade(kind: kind, from: version) }
        return state
    }

    public var queryStatus: String? { nil }
    public var isLive: Bool { false }
    public var isFinished: Bool { false }
    public var isTerminal: Bool { false }
    public var lookupKeys: [String] { [] }
    public func shown(_ views: any RecordViews) throws -> PublicState { PublicState(json: try publicState(views)) }
}

/// A kind whose view is the domain's own, no type of the contract (an app request, a
/// preference): what replies and events carry, with failures as `failures` shows them.
public protocol ViewedInDomain: DurableRecord {
    associatedtype View: Encodable & Sendable
    func view(_ failures: any FailureRenderer) -> View
}

extension ViewedInDomain {
    public func publicState(_ views: any RecordViews) throws -> JSONValue { try JSONCoding.value(of: view(views)) }
}

/// A lookup key made of parts, unambiguous whatever the parts hold.
public enum LookupKey {
    public static func make(_ parts: String...) -> String {
        parts.map { "\($0.utf8.count):\($0)" }.joined()
    }
}

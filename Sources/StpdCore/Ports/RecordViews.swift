import JSONRPC

/// What clients see of each kind of object: the state its events carry (secrets left out), with
/// its failures as `render` shows them. The contract's views are the edge's business, so the
/// daemon supplies this port (to the `EventLog`, which asks it for a record's public state when
/// the record's change commits) and maps the records the services return to the same views in its
/// replies; the domain names no view of the contract. A kind whose view is the domain's own (an
/// app request, a preference) builds it itself (`ViewedInDomain`).
public protocol RecordViews: FailureRenderer {
    func source(_ record: SourceRecord) throws -> PublicState
    func customerSession(_ record: CustomerSessionRecord) throws -> PublicState
    func redirect(_ record: RedirectRecord) throws -> PublicState
    func intent<Intent: StripeIntent>(_ record: IntentRecord<Intent>) throws -> PublicState
    func paymentContext(_ record: PaymentContextRecord) throws -> JSONValue
}

/// A record's public state as the edge built it for a change's event: the view (a type of the
/// contract's, opaque to the domain) and the JSON the event carries, encoded from it. The
/// service hands the view back to the edge with the record (`Shown`), so a reply shows the
/// change without building its view a second time.
public struct PublicState: Sendable {
    public let view: (any Sendable)?
    public let json: JSONValue

    public init<View: Encodable & Sendable>(_ view: View) throws {
        self.view = view
        json = try JSONCoding.value(of: view)
    }

    /// Only the event's JSON, no view to hand back (the kinds still `ViewedInDomain`).
    public init(json: JSONValue) {
        view = nil
        self.json = json
    }
}

/// A record as a service returns it to the edge after a change, with the view its event was
/// encoded from (`PublicState.view`; nil when the change committed nothing), which the reply
/// shows as it is. Reads the record's members through (`shown.id`).
@dynamicMemberLookup
public struct Shown<R: DurableRecord>: Sendable {
    public let record: R
    public let view: (any Sendable)?

    public init(_ record: R, view: (any Sendable)? = nil) {
        self.record = record
        self.view = view
    }

    public subscript<T>(dynamicMember path: KeyPath<R, T>) -> T { record[keyPath: path] }
}

import JSONRPC

/// What clients see of each kind of object: the state its events carry (secrets left out), with
/// its failures as `render` shows them. The contract's views are the edge's business, so the
/// daemon supplies this port (to the `EventLog`, which asks it for a record's public state when
/// the record's change commits) and maps the records the services return to the same views in its
/// replies; the domain names no view of the contract. A kind whose view is the domain's own (an
/// app request, a preference) builds it itself (`ViewedInDomain`).
public protocol RecordViews: FailureRenderer {
    func source(_ record: SourceRecord) throws -> JSONValue
    func paymentContext(_ record: PaymentContextRecord) throws -> JSONValue
}

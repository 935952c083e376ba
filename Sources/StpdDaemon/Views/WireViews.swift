import JSONRPC
import StpdCore
import StpdProtocol

/// The domain's `RecordViews` port: each kind's record as the contract's view (`<Kind>Views.swift`
/// beside this file), its failures as the contract's errors (`WireFailures`). The event log asks
/// it for the public state an event carries; the handlers show the records the services return
/// with the same views, so a reply and its event agree.
public struct WireViews: RecordViews {
    public static let failures = WireFailures()

    public init() {}

    public func render(_ failure: Failure) -> JSONValue { Self.failures.render(failure) }
    public func describe(_ error: any Error) -> JSONValue { Self.failures.describe(error) }

    public func source(_ record: SourceRecord) throws -> PublicState {
        try PublicState(SourceView(record, self))
    }

    public func customerSession(_ record: CustomerSessionRecord) throws -> PublicState {
        try PublicState(CustomerSessionView(record))
    }

    public func redirect(_ record: RedirectRecord) throws -> PublicState {
        try PublicState(RedirectSessionView(record, self))
    }

    public func intent<Intent: StripeIntent>(_ record: IntentRecord<Intent>) throws -> PublicState {
        try PublicState(IntentView(record, self))
    }

    public func paymentContext(_ record: PaymentContextRecord) throws -> JSONValue {
        try JSONCoding.value(of: PaymentContextView(record, self))
    }
}

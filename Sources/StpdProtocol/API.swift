import JSONRPC

/// The whole stpd interface: every method, shared schema, error and notification. The router,
/// stpctl and `proto/stpd.openrpc.json` are all derived from this list.
public enum StpdAPI {
    /// The daemon's version (`stpd --version`, `daemon.ping`, `daemon.status`).
    public static let version = "0.1.0"
    /// The protocol's version, the contract's `info.version`: its major number changes only for
    /// a change that can break a client written against the previous one (docs/protocol.md, "Compatibility").
    public static let protocolVersion = "2.1.1"

    public static let methods: [any RPCMethod.Type] = [
        Discover.self,
        Ping.self,
        DaemonStatusMethod.self,
        DaemonMetrics.self,
        EventsSubscribe.self,
        EventsUnsubscribe.self,
        EventsWait.self,
        DebugEmit.self,
        CustomerOpen.self,
        CustomerGet.self,
        CustomerList.self,
        CustomerRetrieve.self,
        CustomerListPaymentMethods.self,
        CustomerAttachPaymentMethod.self,
        CustomerDetachPaymentMethod.self,
        CustomerUpdateShipping.self,
        CustomerSelectPaymentMethod.self,
        CustomerClearCache.self,
        CustomerClose.self,
        AppRequestAnswer.self,
        AppRequestGet.self,
        SourceCreate.self,
        SourceRetrieve.self,
        SourceGet.self,
        SourceList.self,
        SourcePoll.self,
        SourceStopPolling.self,
        RedirectCreate.self,
        RedirectStart.self,
        RedirectReport.self,
        RedirectGet.self,
        RedirectList.self,
        RedirectCancel.self,
        HandleURL.self,
        AppForeground.self,
        AppBackground.self,
        PaymentIntentRetrieve.self,
        PaymentIntentConfirm.self,
        PaymentIntentHandleNextAction.self,
        PaymentIntentVerifyMicrodeposits.self,
        PaymentIntentGet.self,
        PaymentIntentList.self,
        PaymentIntentStopPolling.self,
        SetupIntentRetrieve.self,
        SetupIntentConfirm.self,
        SetupIntentHandleNextAction.self,
        SetupIntentVerifyMicrodeposits.self,
        SetupIntentGet.self,
        SetupIntentList.self,
        SetupIntentStopPolling.self,
        PaymentContextCreate.self,
        PaymentContextGet.self,
        PaymentContextList.self,
        PaymentContextRetryLoading.self,
        PaymentContextUpdate.self,
        PaymentContextSelectPaymentMethod.self,
        PaymentContextAddCard.self,
        PaymentContextRemovePaymentMethod.self,
        PaymentContextSetShippingAddress.self,
        PaymentContextSelectShippingMethod.self,
        PaymentContextRequestPayment.self,
        PaymentContextAnswer.self,
        PaymentContextCancel.self,
        PaymentContextClose.self,
        CardValidate.self,
    ]

    /// Named schemas that methods reference with `JSONSchema.ref`.
    public static let schemas: [String: JSONSchema] = [
        "DaemonStatus": DaemonStatus.schema,
        "Event": EventRecord.schema,
        "CustomerSession": CustomerSessionView.schema,
        "Source": SourceView.schema,
        "SourcePoll": PollView.schema,
        "RedirectSession": RedirectSessionView.schema,
        "NextAction": NextActionView.schema,
        "IntentPoll": IntentPollView.schema,
        "Intent": IntentView.schema,
        "ErrorObject": errorObjectSchema,
        "PaymentContext": PaymentContextView.schema,
    ]

    public static func method(named name: String) -> (any RPCMethod.Type)? {
        methods.first { $0.name == name }
    }

    /// A validator that resolves the contract's named schemas.
    public static var validator: SchemaValidator {
        SchemaValidator(definitions: schemas.mapValues(\.json))
    }
}

import JSONRPC

/// Application error codes, grouped by kind in blocks of a thousand (all outside the
/// -32768...-32000 range the JSON-RPC spec reserves):
/// 1xxx the request against the daemon's objects, 2xxx events and subscriptions,
/// 3xxx Stripe API errors, 4xxx sources, polls and redirects, 5xxx payment contexts, 6xxx cards and
/// payment methods.
public enum StpdErrors {
    public static let notFound = ErrorDeclaration(
        name: "NotFound", code: 1001, message: "No such object",
        description: "The id names no object the caller may see.")
    public static let permissionDenied = ErrorDeclaration(
        name: "PermissionDenied", code: 1002, message: "Permission denied",
        description:
            "The caller's uid may not do this: the daemon's configuration does not allow it (`data.setting` names the setting, e.g. STPD_SERVER_KEY_UIDS for a keyProvider of kind server), or debug.emit named another uid's debug object. Another uid's ids otherwise answer NotFound, as ids that do not exist."
    )
    public static let invalidState = ErrorDeclaration(
        name: "InvalidState", code: 1003, message: "Not allowed in the object's current state",
        description: "The operation does not apply to the object's current state; `data.state` names it.")
    public static let shuttingDown = ErrorDeclaration(
        name: "ShuttingDown", code: 1004, message: "The daemon is shutting down",
        description: "The request arrived after shutdown began; retry once the daemon is back.")
    public static let disabled = ErrorDeclaration(
        name: "Disabled", code: 1005, message: "This method is disabled",
        description: "The method exists but the daemon's configuration turns it off (`data.setting` names the switch).")
    public static let backendError = ErrorDeclaration(
        name: "BackendError", code: 1006, message: "The merchant's backend answered with an error",
        description:
            "A backend adapter route answered non-2xx without a Stripe error; `data.status` and a redacted `data.body` excerpt say what it sent."
    )
    public static let appRequestFailed = ErrorDeclaration(
        name: "AppRequestFailed", code: 1007, message: "The app answered the request with an error",
        description:
            "An app adapter's answer was an error; `data.operation`, `data.message` and `data.code` are the app's.")
    public static let appRequestTimedOut = ErrorDeclaration(
        name: "AppRequestTimedOut", code: 1008, message: "Nobody answered the app request in time",
        description:
            "An appRequest.pending event got no appRequest.answer before its deadline; `data.operation` and `data.timeoutSeconds` say which."
    )
    public static let appAnswerInvalid = ErrorDeclaration(
        name: "AppAnswerInvalid", code: 1009, message: "The app's answer could not be used",
        description:
            "The app's result is not what the operation needs (e.g. not a customer for retrieveCustomer); `data.operation` names it and the message says what is wrong."
    )
    public static let storeUnavailable = ErrorDeclaration(
        name: "StoreUnavailable", code: 1010, message: "The daemon's database is unavailable",
        description:
            "The shared database of a fleet (STPD_DATABASE_URL) could not be reached within 5 s or failed the transaction; nothing of the request was committed, unless `data.outcome` is `unknown` (the connection went while the commit was on its way and the database could not be asked in time: re-read the object or the event log before retrying). Retry once it is back; `data.instance` names the daemon that answered."
    )
    public static let stateUnreadable = ErrorDeclaration(
        name: "StateUnreadable", code: 1020, message: "An object's sealed state cannot be read on this instance",
        description:
            "The object's state (or an event's) was sealed with a state key this instance does not have, or was damaged; the row is kept as it is. In a fleet every instance needs the same state keys (docs/fleet.md). `data.object` names the object, `data.instance` the daemon that answered."
    )
    public static let tooManyPolls = ErrorDeclaration(
        name: "TooManyPolls", code: 1012, message: "Too many polls are running for this user",
        description:
            "This user already has as many intent and Source polls running as allowed (`data.limit`, raised by `data.setting`). Stop one (`*.stopPolling`) or wait for one to end."
    )
    public static let objectTooLarge = ErrorDeclaration(
        name: "ObjectTooLarge", code: 1011, message: "The object would be too large to store",
        description:
            "Any method that stores an object may answer this: the object's state would exceed STPD_MAX_OBJECT_BYTES as JSON (`data.bytes`, `data.limit`, `data.setting`, and `data.objectId` when the object exists). Nothing of the call was written."
    )
    public static let cursorExpired = ErrorDeclaration(
        name: "CursorExpired", code: 2001, message: "Events after `since` are no longer kept",
        description:
            "Retention dropped events after the given seq; `data.oldestSeq` is the oldest still kept. Re-read the objects' state, then subscribe without `since` (or from `oldestSeq - 1`)."
    )
    public static let subscriptionNotFound = ErrorDeclaration(
        name: "SubscriptionNotFound", code: 2002, message: "No such subscription on this connection",
        description: "The subscription id is unknown, ended, or belongs to another connection.")
    public static let cursorAhead = ErrorDeclaration(
        name: "CursorAhead", code: 2003, message: "`since` is past the last event",
        description:
            "No event with a seq after the latest (`data.latestSeq`) exists yet; the client holds a cursor from other state."
    )
    public static let tooManyWaits = ErrorDeclaration(
        name: "TooManyWaits", code: 2004, message: "Too many events.wait calls are waiting",
        description:
            "This connection or this user already has as many `events.wait` calls waiting as allowed; `data.scope` (`connection` or `user`), `data.limit` and `data.setting` say which bound. Wait for one to return, or subscribe instead."
    )
    public static let tooManySubscriptions = ErrorDeclaration(
        name: "TooManySubscriptions", code: 2005, message: "Too many subscriptions",
        description:
            "This connection or this user already holds as many subscriptions, or as many bytes of their filters, as allowed; `data.scope` (`connection` or `user`), `data.limit` (a count) or `data.maxBytes` (the filters' bytes), and `data.setting` say which bound. End one (`events.unsubscribe`), or filter by type rather than by many object ids."
    )

    public static let redirectUnavailable = ErrorDeclaration(
        name: "RedirectUnavailable", code: 4001, message: "No redirect is possible for this object",
        description:
            "The Source or PaymentIntent needs no redirect now (the SDK's redirect context would be nil): `data.reason` says why, with `data.status`, `data.flow` and `data.type` as Stripe sent them."
    )
    public static let redirectOpenFailed = ErrorDeclaration(
        name: "RedirectOpenFailed", code: 4002, message: "The URL could not be opened",
        description:
            "STPD_URL_OPENER failed (`data.exitStatus`, `data.url` redacted of secrets), or a WeChat Pay source's app could not be opened (no app URL, or the app reported `nativeOpenFailed`): the SDK's STPRedirectContextErrorDomain error 0, carried in the session's completion and outcome with `data.reason` `appRedirectError` and `data.sdkDomain`/`data.sdkCode`. Offer WeChat Pay only where WeChat is installed."
    )
    public static let redirectCancelled = ErrorDeclaration(
        name: "RedirectCancelled", code: 4003, message: "The customer closed the redirect page before it completed",
        description:
            "Carried in a redirect session's completion and outcome when the app reported `closed` (redirect.report): the SDK's cancellation error (`com.stripe.lib` code 80 in `data.sdkDomain`, `data.sdkCode`), with the app's `data.message` if it gave one."
    )
    public static let redirectLoadFailed = ErrorDeclaration(
        name: "RedirectLoadFailed", code: 4004, message: "The redirect page failed to load",
        description:
            "Carried in a redirect session's completion and outcome when the app reported `loadFailed` for a page on a stripe.com host (redirect.report): the SDK's generic connection error (`com.stripe.lib` code 40 in `data.sdkDomain`, `data.sdkCode`), with `data.url` (redacted) and the app's `data.message`."
    )

    public static let pendingActionGone = ErrorDeclaration(
        name: "PendingActionGone", code: 5001, message: "No such pending action is waiting",
        description:
            "The pending action was answered already, timed out, was dropped with its context, or never existed; `data.action` names it and `data.state` says which when known."
    )
    public static let pendingActionTimedOut = ErrorDeclaration(
        name: "PendingActionTimedOut", code: 5002, message: "Nobody answered the pending action in time",
        description:
            "Carried as the error of didFinish (didCreatePaymentResult) or paymentContext.shippingInvalid (didUpdateShippingAddress) when the deadline passed; `data.action` and `data.kind` say which."
    )
    public static let paymentFailed = ErrorDeclaration(
        name: "PaymentFailed", code: 5003, message: "The payment did not succeed",
        description:
            "STPPaymentHandler's failure of an intent, carried as the error of a confirmation's result, a poll's end, a redirect outcome or a payment context's didFinish: the intent's status is not a success for the call that began the action (docs/next-actions.md has the table: e.g. requires_payment_method, requires_confirmation after a confirmation, processing with a payment method that is not a delayed-notification one, any processing SetupIntent). `data.paymentIntentStatus` (`data.setupIntentStatus`) and `data.lastPaymentError` (`data.lastSetupError`) are Stripe's; `data.reason` is the SDK's error code: `authenticationFailed` or `paymentError` (requires_payment_method after an action, by Stripe's last error), `requiresPaymentMethod` (requires_payment_method as confirmed or handed over), `intentStatus` (a status that is not a success), `unexpected` (a status the SDK does not know); the list is open. Also carried as didFinish's error when the app answered didCreatePaymentResult with error (`data.message`, `data.code` are the app's)."
    )

    public static let shippingAddressIncomplete = ErrorDeclaration(
        name: "ShippingAddressIncomplete", code: 5004, message: "The shipping address lacks required fields",
        description:
            "paymentContext.setShippingAddress was given an address that fails the configuration's `requiredShippingAddressFields` by the SDK's rules (a name; an email address; a phone number with its country's digits; line 1, city, country, a US state and a postal code valid for the country), which the SDK's shipping form would not submit: nothing was asked of the app or saved. `data.fields` are the required fields it fails, `data.parameters` the params that are missing or not valid (e.g. `address.phone`, `address.address.postalCode`), `data.parameter` the first."
    )

    public static let cardInvalid = ErrorDeclaration(
        name: "CardInvalid", code: 6001, message: "The card is not valid",
        description:
            "The card given to source.create, paymentIntent.confirm, setupIntent.confirm or paymentContext.addCard fails the SDK's STPCardValidator rules (see card.validate), so nothing was sent to Stripe. `data.parameter` is the path of the first field that is not valid (e.g. `card.number`), `data.field` its card member (number, expMonth, expYear or cvc), `data.state` `invalid` or `incomplete`, and `data.brand` the brand the number names: highlight that field."
    )

    public static let nextActionUnsupported = ErrorDeclaration(
        name: "NextActionUnsupported", code: 6010, message: "stpd cannot carry this next action",
        description:
            "Stripe asked for a next action stpd has no way to carry on Linux: `data.type` names it (use_stripe_sdk's native 3-D Secure 2 `stripe_3ds2_fingerprint` or its hCaptcha `intent_confirmation_challenge`, WeChat Pay's Android action, a redirect whose page Stripe did not give, a type nobody knows), `data.kind` is its kind, and the message says what the app can do instead (for use_stripe_sdk: confirm with a returnURL, or on the merchant's server with return_url, so that Stripe answers with a redirect). The SDK's unsupportedAuthentication error; the intent stays in requires_action."
    )
    public static let returnURLRequired = ErrorDeclaration(
        name: "ReturnURLRequired", code: 6011, message: "This next action needs a return URL",
        description:
            "The next action (`data.type`) sends the customer away and back, and no `returnURL` was given (`data.parameter`): confirm again with one. A card that needs 3-D Secure gets a redirect_to_url only when the confirmation has a return URL; without one Stripe answers use_stripe_sdk, whose three_d_secure_redirect page stpd opens like any redirect and whose native forms need the confirmation's return URL. The SDK's missingReturnURL."
    )
    public static let intentPollTimedOut = ErrorDeclaration(
        name: "IntentPollTimedOut", code: 6012, message: "The customer did not complete the payment in time",
        description:
            "Not sent since protocol 2.1: a poll awaiting the customer that reaches its deadline makes one last read 3 s later and, still requiring action, ends `canceled` as PaymentSheet's polling screen does (docs/next-actions.md). Declared for 2.0 clients: `data.type`, `data.deadline`, `data.status`."
    )

    /// Every declared error, in code order; the contract lists exactly these.
    public static let all: [ErrorDeclaration] =
        [
            notFound, permissionDenied, invalidState, shuttingDown, disabled, backendError, appRequestFailed,
            appRequestTimedOut, appAnswerInvalid, storeUnavailable, objectTooLarge, tooManyPolls, stateUnreadable,
            cursorExpired, subscriptionNotFound, cursorAhead, tooManyWaits, tooManySubscriptions,
        ] + stripe
        + [
            redirectUnavailable, redirectOpenFailed, redirectCancelled, redirectLoadFailed, pendingActionGone,
            pendingActionTimedOut, paymentFailed, shippingAddressIncomplete, cardInvalid, nextActionUnsupported,
            returnURLRequired, intentPollTimedOut,
        ]
}

import JSONRPC

/// One event type: what changed, and the schema of the object state it carries.
public struct EventTypeDeclaration: Sendable {
    public var type: String
    public var summary: String
    public var object: JSONSchema
}

/// Every event type stpd appends, with the object each carries (`x-event-types` in the contract;
/// the end-to-end tests check every event they see against it).
public enum EventTypes {
    public static let all: [EventTypeDeclaration] = customer + appRequest + source + redirect + paymentContext + [debug]

    static func declare(_ object: JSONSchema, _ pairs: [(String, String)]) -> [EventTypeDeclaration] {
        pairs.map { EventTypeDeclaration(type: $0.0, summary: $0.1, object: object) }
    }

    static let customer =
        declare(
            .ref("CustomerSession"),
            [
                ("customer.opened", "A customer session was opened"),
                ("customer.loaded", "The customer or its payment methods were fetched"),
                ("customer.paymentMethodAttached", "A PaymentMethod was attached"),
                ("customer.paymentMethodDetached", "A PaymentMethod was detached"),
                ("customer.shippingUpdated", "The customer's shipping address was set"),
                ("customer.paymentMethodSelected", "The last selected PaymentMethod was remembered"),
                ("customer.cacheCleared", "The cached customer and payment methods were dropped"),
                ("customer.failed", "An operation failed (lastError says which)"),
                ("customer.closed", "The session was closed"),
                ("customer.removed", "Closed longer than the retention age: removed (its last state)"),
            ]) + [
            EventTypeDeclaration(
                type: "customer.preferenceChanged",
                summary: "The last selected PaymentMethod of a customer changed (any session of the uid)",
                object: .object(
                    [
                        "customerId": .string("The Stripe customer"),
                        "paymentMethod": .nullable(.string("The PaymentMethod, or null")),
                    ],
                    required: ["customerId"]))
        ]

    static let appRequest = declare(
        .object(
            [
                "id": .string("The request id (areq_...)"), "object": JSONSchema(["const": "app_request"]),
                "session": .string("The customer session asking"), "operation": .string("What the app is asked to do"),
                "params": JSONSchema(["description": "The operation's arguments"]),
                "state": .enumeration(
                    ["pending", "answered", "timedOut", "cancelled", "abandoned"], "Where the request stands"),
                "deadline": .string("RFC 3339", format: "date-time"),
                "error": JSONSchema(["type": "object", "description": "The app's error answer"]),
            ], required: ["id", "object", "session", "operation", "state", "deadline"]),
        [
            ("appRequest.pending", "The app is asked for something; answer with appRequest.answer"),
            ("appRequest.answered", "The app answered"),
            ("appRequest.timedOut", "Nobody answered before the deadline"),
            ("appRequest.cancelled", "The asker stopped waiting"),
            ("appRequest.abandoned", "Left pending by an earlier daemon process"),
            ("appRequest.removed", "Finished longer than the retention age: removed (its last state)"),
        ])

    static let source = declare(
        .ref("Source"),
        [
            ("source.created", "stpd created the Source"),
            ("source.retrieved", "stpd saw the Source for the first time"),
            ("source.updated", "A retrieve found the Source changed"),
            ("source.pollStarted", "A poll started (replacing any running one)"),
            ("source.polled", "The poll saw a new status, error or retry count"),
            ("source.pollPaused", "app.background paused the poll"),
            ("source.pollResumed", "app.foreground resumed the poll"),
            ("source.pollFinished", "The poll ended (once): poll.sourceStatus and poll.error"),
            ("source.pollStopped", "source.stopPolling stopped the poll; it never reports"),
            ("source.removed", "Not polled for longer than the retention age: forgotten (its last state)"),
        ])

    static let redirect = declare(
        .ref("RedirectSession"),
        [
            ("redirect.created", "A redirect session was opened"),
            ("redirect.started", "It was started: openURL is the URL to open"),
            ("redirect.completed", "Its return URL arrived, the app came to the foreground, or opening failed"),
            ("redirect.cancelled", "It was cancelled; it never completes"),
            ("redirect.outcome", "The follow-up found the Source's or PaymentIntent's status"),
            ("redirect.removed", "Finished (or never started) longer than the retention age: removed (its last state)"),
        ])

    static let paymentContext = declare(
        .ref("PaymentContext"),
        [
            ("paymentContext.created", "A payment context was created (loading starts)"),
            ("paymentContext.didChange", "paymentContextDidChange: anything changed"),
            ("paymentContext.didFailToLoad", "didFailToLoadWithError: loadError says why"),
            ("paymentContext.needsInput", "requestPayment waits for what the SDK shows a screen for (needs)"),
            ("paymentContext.pendingAction", "A delegate callback with a completion waits for paymentContext.answer"),
            (
                "paymentContext.shippingInvalid",
                "The app refused the address, or did not answer in time (shippingError)"
            ),
            (
                "paymentContext.shippingSaveFailed",
                "Saving the accepted address to the customer failed (shippingSaveError)"
            ),
            ("paymentContext.didFinish", "didFinishWithStatus: lastResult"),
            ("paymentContext.closed", "The context was closed"),
            ("paymentContext.removed", "Closed or idle longer than the retention age: removed (its last state)"),
        ])

    static let debug = EventTypeDeclaration(
        type: "debug.test", summary: "debug.emit's test events (only with --debug-methods)",
        object: .object(
            [
                "id": .string("The object id"), "object": JSONSchema(["const": "debug"]),
                "n": .integer("1, 2, ... within one call"),
                "payload": JSONSchema(["description": "As given to debug.emit"]),
            ],
            required: ["id", "object", "n"]))
}

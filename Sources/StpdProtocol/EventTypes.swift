import JSONRPC
import StpdValues

/// An event family as the contract declares it: its names (StpdValues, where the domain appends
/// them from), with what each means and the object every event of the family carries.
public protocol DeclaredEvent: EventName {
    /// The schema of the object state every event of the family carries.
    static var object: JSONSchema { get }
    /// What happened, for the contract.
    var summary: String { get }
}

extension DeclaredEvent {
    public static var declarations: [EventTypeDeclaration] {
        allCases.map { EventTypeDeclaration(type: $0.type.name, summary: $0.summary, object: object) }
    }
}

/// One event type: what changed, and the schema of the object state it carries.
public struct EventTypeDeclaration: Sendable {
    public var type: String
    public var summary: String
    public var object: JSONSchema
}

/// Every event type stpd appends, with the object each carries (`x-event-types` in the contract;
/// the end-to-end tests check every event they see against it).
public enum EventTypes {
    public static let all: [EventTypeDeclaration] =
        CustomerEvent.declarations + CustomerPreferenceEvent.declarations + AppRequestEvent.declarations
        + SourceEvent.declarations + RedirectEvent.declarations + PaymentIntentEvent.declarations
        + SetupIntentEvent.declarations + PaymentContextEvent.declarations + DebugEvent.declarations
}

extension CustomerEvent: DeclaredEvent {
    public static let object = JSONSchema.ref("CustomerSession")
    public var summary: String {
        switch self {
        case .opened: "A customer session was opened"
        case .loaded: "The customer or its payment methods were fetched"
        case .paymentMethodAttached: "A PaymentMethod was attached"
        case .paymentMethodDetached: "A PaymentMethod was detached"
        case .shippingUpdated: "The customer's shipping address was set"
        case .paymentMethodSelected: "The last selected PaymentMethod was remembered"
        case .cacheCleared: "The cached customer and payment methods were dropped"
        case .failed: "An operation failed (lastError says which)"
        case .closed: "The session was closed"
        case .removed: "Closed longer than the retention age: removed (its last state)"
        }
    }
}

extension CustomerPreferenceEvent: DeclaredEvent {
    public static let object = JSONSchema.object(
        [
            "customerId": .string("The Stripe customer"),
            "paymentMethod": .nullable(.string("The PaymentMethod, or null")),
        ],
        required: ["customerId"])
    public var summary: String { "The last selected PaymentMethod of a customer changed (any session of the uid)" }
}

extension AppRequestEvent: DeclaredEvent {
    public static let object = JSONSchema.object(
        [
            "id": .string("The request id (areq_...)"), "object": JSONSchema(["const": "app_request"]),
            "session": .string("The customer session asking"), "operation": .string("What the app is asked to do"),
            "params": JSONSchema(["description": "The operation's arguments"]),
            "state": .cases(of: AppRequestState.self, "Where the request stands"),
            "deadline": .string("RFC 3339", format: "date-time"),
            "error": JSONSchema(["type": "object", "description": "The app's error answer"]),
        ], required: ["id", "object", "session", "operation", "state", "deadline"])
    public var summary: String {
        switch self {
        case .entered(.pending): "The app is asked for something; answer with appRequest.answer"
        case .entered(.answered): "The app answered"
        case .entered(.timedOut): "Nobody answered before the deadline"
        case .entered(.cancelled): "The asker stopped waiting"
        case .entered(.abandoned): "Its asker is gone: the daemon process that asked stopped or died"
        case .removed: "Finished longer than the retention age: removed (its last state)"
        }
    }
}

extension SourceEvent: DeclaredEvent {
    public static let object = JSONSchema.ref("Source")
    public var summary: String {
        switch self {
        case .created: "stpd created the Source"
        case .retrieved: "stpd saw the Source for the first time"
        case .updated: "A retrieve found the Source changed"
        case .pollStarted: "A poll started (replacing any running one)"
        case .polled: "The poll saw a new status, error or retry count"
        case .pollPaused: "app.background paused the poll"
        case .pollResumed: "app.foreground resumed the poll"
        case .pollFinished: "The poll ended (once): poll.sourceStatus and poll.error"
        case .pollStopped: "source.stopPolling stopped the poll; it never reports"
        case .removed: "Not polled for longer than the retention age: forgotten (its last state)"
        }
    }
}

extension RedirectEvent: DeclaredEvent {
    public static let object = JSONSchema.ref("RedirectSession")
    public var summary: String {
        switch self {
        case .created: "A redirect session was opened"
        case .started: "It was started: openURL is the URL to open"
        case .fallback:
            "The app could not open the native URL (redirect.report): openURL is now the web page, which completes on the return URL only"
        case .completed:
            "Its return URL arrived, the app came to the foreground, the app reported the page closed or failed, or opening failed"
        case .cancelled: "It was cancelled; it never completes"
        case .outcome: "The follow-up found the Source's or PaymentIntent's status"
        case .removed: "Finished (or never started) longer than the retention age: removed (its last state)"
        }
    }
}

extension IntentEvent: DeclaredEvent {
    public static var object: JSONSchema { .ref("Intent") }
    public var summary: String {
        switch name {
        case .pollStarted:
            "A poll started: the customer pays elsewhere (nextAction.details), or a redirect session completed (replacing any running poll)"
        case .finished: "The poll ended (once): poll.result is STPPaymentHandler's verdict, poll.error why it failed"
        case .pollStopped: "\(K.prefix).stopPolling stopped the poll; it never reports"
        case .removed: "Not polled for longer than the retention age: forgotten (its last state)"
        }
    }
}

extension PaymentContextEvent: DeclaredEvent {
    public static let object = JSONSchema.ref("PaymentContext")
    public var summary: String {
        switch self {
        case .created: "A payment context was created (loading starts)"
        case .didChange: "paymentContextDidChange: anything changed"
        case .didFailToLoad: "didFailToLoadWithError: loadError says why"
        case .needsInput: "requestPayment waits for what the SDK shows a screen for (needs)"
        case .pendingAction: "A delegate callback with a completion waits for paymentContext.answer"
        case .shippingInvalid: "The app refused the address, or did not answer in time (shippingError)"
        case .shippingSaveFailed: "Saving the accepted address to the customer failed (shippingSaveError)"
        case .didFinish: "didFinishWithStatus: lastResult"
        case .closed: "The context was closed"
        case .removed: "Closed or idle longer than the retention age: removed (its last state)"
        }
    }
}

extension DebugEvent: DeclaredEvent {
    public static let object = JSONSchema.object(
        [
            "id": .string("The object id"), "object": JSONSchema(["const": "debug"]),
            "n": .integer("1, 2, ... within one call"),
            "payload": JSONSchema(["description": "As given to debug.emit"]),
        ],
        required: ["id", "object", "n"])
    public var summary: String { "debug.emit's test events (only with --debug-methods)" }
}

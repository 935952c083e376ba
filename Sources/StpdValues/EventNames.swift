// The names of the events the domain appends: the event log stores them and the contract lists
// them (`x-event-types`, with a summary and the object each carries: StpdProtocol's
// `EventTypes`), spelt the same on disk and on the wire (docs/architecture.md).

/// One family of events: those about one kind of object, named `<prefix>.<case>` on the wire.
/// The domain appends events only through these enums, so a misspelled event does not compile,
/// and the contract's `x-event-types` is built from them: there is no second list.
public protocol EventName: RawRepresentable<String>, CaseIterable, Sendable, Hashable {
    /// The part before the dot (`customer`, `source`...).
    static var prefix: String { get }
}

extension EventName {
    /// The event's wire name.
    public var type: EventType { EventType(name: "\(Self.prefix).\(rawValue)") }
}

/// An event type's wire name (`redirect.completed`), made only from a declared `EventName`.
public struct EventType: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    fileprivate init(name: String) { self.name = name }
    /// For tests of the event log and stores, where any name will do.
    @_spi(Testing) public init(testing name: String) { self.name = name }
    public var description: String { name }
}

/// Which kind of intent a declaration is for: the methods, results and events of PaymentIntents
/// and SetupIntents are one generic declaration each, named by this.
public protocol IntentNaming: Sendable {
    /// The wire prefix of its methods and events, and the member its Stripe object is under in
    /// results (`paymentIntent`).
    static var prefix: String { get }
    /// As messages name it (`PaymentIntent`).
    static var noun: String { get }
    /// Stripe's id prefix (`pi_`).
    static var idPrefix: String { get }
    /// The `last_payment_error` of a PaymentIntent, the `last_setup_error` of a SetupIntent.
    static var lastErrorField: String { get }
}

public enum PaymentIntentNaming: IntentNaming {
    public static var prefix: String { "paymentIntent" }
    public static var noun: String { "PaymentIntent" }
    public static var idPrefix: String { "pi_" }
    public static var lastErrorField: String { "last_payment_error" }
}

public enum SetupIntentNaming: IntentNaming {
    public static var prefix: String { "setupIntent" }
    public static var noun: String { "SetupIntent" }
    public static var idPrefix: String { "seti_" }
    public static var lastErrorField: String { "last_setup_error" }
}

public enum CustomerEvent: String, EventName {
    case opened, loaded, paymentMethodAttached, paymentMethodDetached, shippingUpdated, paymentMethodSelected
    case cacheCleared, failed, closed, removed

    public static let prefix = "customer"
}

/// The last selected PaymentMethod per customer and uid (the SDK keeps it per customer).
public enum CustomerPreferenceEvent: String, EventName {
    case preferenceChanged

    public static let prefix = "customer"
}

/// An app request's events: one for each state it enters (`appRequest.<state>`), then its removal.
public enum AppRequestEvent: EventName {
    case entered(AppRequestState)
    case removed

    public init?(rawValue: String) {
        if rawValue == "removed" {
            self = .removed
        } else if let state = AppRequestState(rawValue: rawValue) {
            self = .entered(state)
        } else {
            return nil
        }
    }

    public var rawValue: String {
        switch self {
        case .entered(let state): state.rawValue
        case .removed: "removed"
        }
    }

    public static var allCases: [AppRequestEvent] { AppRequestState.allCases.map(Self.entered) + [.removed] }

    public static let prefix = "appRequest"
}

public enum SourceEvent: String, EventName {
    case created, retrieved, updated, pollStarted, polled, pollPaused, pollResumed, pollFinished, pollStopped
    case removed

    public static let prefix = "source"
}

public enum RedirectEvent: String, EventName {
    case created, started, fallback, completed, cancelled, outcome, removed

    public static let prefix = "redirect"
}

/// The events of an intent stpd polls (`paymentIntent.<name>`, `setupIntent.<name>`): one family
/// per kind of intent, declared once.
public struct IntentEvent<K: IntentNaming>: EventName {
    public enum Name: String, CaseIterable, Sendable, Hashable {
        case pollStarted, finished, pollStopped, removed
    }

    public let name: Name
    public init(_ name: Name) { self.name = name }
    public init?(rawValue: String) {
        guard let name = Name(rawValue: rawValue) else { return nil }
        self.init(name)
    }
    public var rawValue: String { name.rawValue }
    public static var allCases: [Self] { Name.allCases.map(Self.init) }

    public static var prefix: String { K.prefix }

    public static var pollStarted: Self { Self(.pollStarted) }
    public static var finished: Self { Self(.finished) }
    public static var pollStopped: Self { Self(.pollStopped) }
    public static var removed: Self { Self(.removed) }
}

public typealias PaymentIntentEvent = IntentEvent<PaymentIntentNaming>
public typealias SetupIntentEvent = IntentEvent<SetupIntentNaming>

public enum PaymentContextEvent: String, EventName {
    case created, didChange, didFailToLoad, needsInput, pendingAction, shippingInvalid, shippingSaveFailed
    case didFinish, closed, removed

    public static let prefix = "paymentContext"
}

public enum DebugEvent: String, EventName {
    case test

    public static let prefix = "debug"
}

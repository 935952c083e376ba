import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// What stpd stores of a payment context: the SDK's state plus what a restart needs (the pending
/// action's deadline, a managed PaymentIntent's client secret). Public for the edge, which shows
/// it as the contract's `PaymentContextView`; what the SDK derives from it (the summary items, the
/// payment amount, whether it is ready) is in `PaymentSummary.swift`.
public struct PaymentContextRecord: DurableRecord, Hashable {
    public typealias RequestState = PaymentRequestState

    /// A delegate callback with a completion, waiting for the app's answer (`PaymentContexts.answer`).
    public struct Pending: Codable, Sendable, Hashable {
        public internal(set) var id: String
        public internal(set) var kind: PendingActionKind
        public internal(set) var deadline: Date
        /// didCreatePaymentResult: `{paymentMethod}`; didUpdateShippingAddress: `{address}`.
        public internal(set) var payload: JSONValue
    }

    /// The last didFinish.
    public struct PaymentResult: Codable, Sendable, Hashable {
        public internal(set) var status: PaymentStatus
        public internal(set) var error: Failure?
    }

    public typealias Configuration = PaymentContextConfiguration

    /// A payment option: a card PaymentMethod of the customer's, labelled as the SDK does.
    public struct Option: Codable, Sendable, Hashable {
        public internal(set) var id: String
        /// The SDK's label, e.g. "Visa 4242".
        public internal(set) var label: String
        public internal(set) var type: String
        /// The Stripe PaymentMethod as Stripe answered it.
        public internal(set) var paymentMethod: JSONValue
    }

    /// A shipping method the app offered for the address.
    public typealias ShippingMethod = ShippingMethodOffer

    public typealias SummaryItem = AppSummaryItem

    /// A PaymentIntent stpd confirms itself (never shown: its client secret is a secret).
    public struct ManagedIntent: Codable, Sendable, Hashable {
        var clientSecret: String
        var returnURL: String?
    }

    public internal(set) var id: String
    public internal(set) var owner: UInt32
    /// The customer session it reaches its customer through.
    public internal(set) var session: String
    public internal(set) var status = PaymentContextStatus.open
    /// Minor units, without shipping.
    public internal(set) var amount: Int
    public internal(set) var currency: String
    public internal(set) var country: String
    public internal(set) var configuration: Configuration
    /// The app answers didUpdateShippingAddress.
    public internal(set) var validatesShipping: Bool
    var defaultPaymentMethod: String?
    var pendingActionTimeout: Double
    public internal(set) var loading = true
    public internal(set) var loadError: Failure?
    /// Card PaymentMethods, sorted by label.
    public internal(set) var options: [Option] = []
    /// The selected option's id.
    public internal(set) var selected: String?
    public internal(set) var shippingAddress: ShippingAddressParams?
    /// Prefilled or from the customer, not yet confirmed.
    public internal(set) var shippingNeedsVerification = false
    public internal(set) var shippingMethods: [ShippingMethod]?
    public internal(set) var selectedShippingMethod: String?
    /// The app's own paymentSummaryItems (the last is the total); nil: stpd builds them.
    var customSummaryItems: [SummaryItem]?
    public internal(set) var requestState = RequestState.none
    /// The input requestPayment waits for.
    public internal(set) var needs: PaymentContextNeed?
    /// requestPayment arrived while loading: it runs when loading ends (the SDK waits on its promise).
    var requestWaitsForLoad = false
    public internal(set) var pending: Pending?
    var managed: ManagedIntent?
    /// The redirect session of a managed PaymentIntent, while it runs.
    public internal(set) var redirect: String?
    /// The managed PaymentIntent whose poll it waits for: the customer pays elsewhere.
    var awaiting: String?
    public internal(set) var lastResult: PaymentResult?
    /// Why the app refused the last address (didUpdateShippingAddress invalid, or its timeout).
    public internal(set) var shippingError: Failure?
    /// Why saving the accepted address to the customer failed, if it did.
    public internal(set) var lastShippingSaveError: Failure?
    public internal(set) var createdAt: Date
    public var updatedAt: Date

    /// Its creator, as whom it reaches its customer session.
    var caller: Caller { Caller(uid: owner) }

    var shippingType: String { configuration.shippingType ?? "shipping" }
    var companyName: String { configuration.companyName ?? "" }

    /// The SDK's `STPPaymentContext.shippingAddress` rule for `requestPayment`: is the shipping
    /// screen needed before paying?
    var needsShippingInput: Bool {
        let required = configuration.requiredShippingAddressFields ?? []
        guard !required.isEmpty else { return false }
        let incomplete = shippingAddress.map { !$0.contains(requiredFields: required) } ?? true
        let verify = (configuration.verifyPrefilledShippingAddress ?? true) && shippingNeedsVerification
        let methodRequired = shippingType == "shipping" && validatesShipping && selectedShippingMethod == nil
        return incomplete || verify || methodRequired
    }

    /// Sets the shipping methods by 19.x's rule: an empty list clears the selection; a selection
    /// missing from the new list moves to the first method. A deliberate difference: 21.0 to 23.x
    /// invert the membership test (a listed selection moves to the first), a bug stpd does not copy.
    mutating func setShippingMethods(_ methods: [ShippingMethod]?, preferred: String?) {
        shippingMethods = methods
        guard let methods else { return }
        if let preferred, methods.contains(where: { $0.identifier == preferred }) {
            selectedShippingMethod = preferred
        } else if methods.isEmpty {
            selectedShippingMethod = nil
        } else if selectedShippingMethod == nil || !methods.contains(where: { $0.identifier == selectedShippingMethod })
        {
            selectedShippingMethod = methods[0].identifier
        }
    }

    public func publicState(_ views: any RecordViews) throws -> JSONValue { try views.paymentContext(self) }

    public static let kind = ObjectKind.paymentContext
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    public static let schemaVersion = 1
    public static let removed: PaymentContextEvent? = .removed

    static func actionKey(_ action: String) -> String { LookupKey.make("paymentContext", "action", action) }
    static func redirectKey(_ session: String) -> String { LookupKey.make("paymentContext", "redirect", session) }
    static func awaitingKey(_ intent: String) -> String { LookupKey.make("paymentContext", "awaiting", intent) }

    public var queryStatus: String? { status.rawValue }
    /// Loading, a deadline, or a managed payment under way: work this process picks up at start.
    public var isLive: Bool {
        status == .open
            && (loading || pending != nil || requestWaitsForLoad
                || (managed != nil && requestState == .requestingPayment))
    }
    /// Closed, or idle: loaded, no request running, nothing pending.
    public var isFinished: Bool {
        status == .closed || (!loading && requestState == .none && pending == nil && !requestWaitsForLoad)
    }
    public var isTerminal: Bool { status == .closed }
    /// Answers find a context by its pending action, a redirect's outcome by its session, a poll's
    /// end by its PaymentIntent.
    public var lookupKeys: [String] {
        (pending.map { [Self.actionKey($0.id)] } ?? []) + (redirect.map { [Self.redirectKey($0)] } ?? [])
            + (awaiting.map { [Self.awaitingKey($0)] } ?? [])
    }

    /// Options as the SDK keeps them: card PaymentMethods only, sorted by label.
    static func options(_ methods: [PaymentMethod]) -> [Option] {
        methods.filter { $0.type == "card" }.map { option($0) }.sorted { $0.label < $1.label }
    }

    static func option(_ method: PaymentMethod) -> Option {
        .init(id: method.id, label: method.label, type: method.type, paymentMethod: method.allResponseFields)
    }
}

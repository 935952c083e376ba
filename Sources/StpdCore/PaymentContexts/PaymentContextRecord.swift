import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// What stpd stores of a payment context: the SDK's state plus what a restart needs (the pending
/// action's deadline, a managed PaymentIntent's client secret).
struct PaymentContextRecord: DurableRecord {
    typealias RequestState = PaymentRequestState

    struct Pending: Codable, Sendable {
        var id: String
        var kind: PendingActionKind
        var deadline: Date
        var payload: JSONValue
    }

    /// The last didFinish.
    struct PaymentResult: Codable, Sendable {
        var status: PaymentStatus
        var error: Failure?
    }

    typealias Configuration = PaymentContextConfiguration

    /// A payment option: a card PaymentMethod of the customer's, labelled as the SDK does.
    struct Option: Codable, Sendable {
        var id: String
        var label: String
        var type: String
        var paymentMethod: JSONValue
    }

    /// A shipping method the app offered for the address.
    typealias ShippingMethod = ShippingMethodOffer

    typealias SummaryItem = AppSummaryItem

    struct ManagedIntent: Codable, Sendable {
        var clientSecret: String
        var returnURL: String?
    }

    var id: String
    var owner: UInt32
    var session: String
    var status = PaymentContextStatus.open
    var amount: Int
    var currency: String
    var country: String
    var configuration: Configuration
    var validatesShipping: Bool
    var defaultPaymentMethod: String?
    var pendingActionTimeout: Double
    var loading = true
    var loadError: Failure?
    var options: [Option] = []
    var selected: String?
    var shippingAddress: ShippingAddressParams?
    var shippingNeedsVerification = false
    var shippingMethods: [ShippingMethod]?
    var selectedShippingMethod: String?
    /// The app's own paymentSummaryItems (the last is the total); nil: stpd builds them.
    var customSummaryItems: [SummaryItem]?
    var requestState = RequestState.none
    var needs: PaymentContextNeed?
    /// requestPayment arrived while loading: it runs when loading ends (the SDK waits on its promise).
    var requestWaitsForLoad = false
    var pending: Pending?
    var managed: ManagedIntent?
    var redirect: String?
    /// The managed PaymentIntent whose poll it waits for: the customer pays elsewhere.
    var awaiting: String?
    var lastResult: PaymentResult?
    var shippingError: Failure?
    var lastShippingSaveError: Failure?
    var createdAt: Date
    var updatedAt: Date

    /// Its creator, as whom it reaches its customer session.
    var caller: Caller { Caller(uid: owner) }

    var shippingType: String { configuration.shippingType ?? "shipping" }
    var companyName: String { configuration.companyName ?? "" }

    var shippingAmount: Int {
        shippingMethods?.first { $0.identifier == selectedShippingMethod }?.amount ?? 0
    }

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

    /// The SDK's `paymentSummaryItems`: [shipping, total labelled companyName]; or the app's items
    /// with, when a method is selected, the shipping item before the total and the total grown by it.
    /// The app may set none at all, as in the SDK: then there are no items, and the payment amount
    /// is the shipping method's alone.
    var summaryItems: (items: [PaymentContextView.SummaryItem], total: Int) {
        let item = { (label: String, amount: Int) in
            PaymentContextView.SummaryItem(
                label: label, amount: amount, decimal: CurrencyAmounts.decimal(amount, currency: currency))
        }
        let shipping = shippingMethods?.first { $0.identifier == selectedShippingMethod }
        let own = customSummaryItems ?? []
        let total = (customSummaryItems == nil ? amount : own.last?.amount ?? 0) + shippingAmount
        if customSummaryItems?.isEmpty == true { return ([], total) }
        let items =
            own.dropLast().map { item($0.label, $0.amount) } + (shipping.map { [item($0.label, $0.amount)] } ?? [])
            + [item(own.last?.label ?? companyName, total)]
        return (items, total)
    }

    func view(_ failures: any FailureRenderer) -> PaymentContextView {
        let (items, total) = summaryItems
        return PaymentContextView(
            id: id, customerSession: session, status: status, amount: amount, currency: currency, country: country,
            configuration: PaymentConfiguration(configuration), validatesShipping: validatesShipping, loading: loading,
            loadError: loadError.map(failures.render),
            paymentOptions: options.map(PaymentContextView.Option.init), selectedPaymentMethod: selected,
            shippingAddress: shippingAddress,
            shippingAddressNeedsVerification: shippingNeedsVerification,
            shippingMethods: shippingMethods?.map(StpdProtocol.ShippingMethod.init),
            selectedShippingMethod: selectedShippingMethod, paymentSummaryItems: items, paymentAmount: total,
            isReadyForPayment: !loading && loadError == nil && selected != nil, requestState: requestState,
            needs: needs,
            pendingAction: pending.map {
                .init(id: $0.id, kind: $0.kind, deadline: $0.deadline.formatted(.iso8601), payload: $0.payload)
            },
            redirect: redirect,
            lastResult: lastResult.map {
                ["status": .string($0.status.rawValue), "error": $0.error.map(failures.render) ?? .null]
            },
            shippingError: shippingError.map(failures.render),
            shippingSaveError: lastShippingSaveError.map(failures.render), createdAt: createdAt.formatted(.iso8601),
            updatedAt: updatedAt.formatted(.iso8601))
    }

    static let kind = ObjectKind.paymentContext
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static let schemaVersion = 1
    static let removed: PaymentContextEvent? = .removed

    static func actionKey(_ action: String) -> String { LookupKey.make("paymentContext", "action", action) }
    static func redirectKey(_ session: String) -> String { LookupKey.make("paymentContext", "redirect", session) }
    static func awaitingKey(_ intent: String) -> String { LookupKey.make("paymentContext", "awaiting", intent) }

    var queryStatus: String? { status.rawValue }
    /// Loading, a deadline, or a managed payment under way: work this process picks up at start.
    var isLive: Bool {
        status == .open
            && (loading || pending != nil || requestWaitsForLoad
                || (managed != nil && requestState == .requestingPayment))
    }
    /// Closed, or idle: loaded, no request running, nothing pending.
    var isFinished: Bool {
        status == .closed || (!loading && requestState == .none && pending == nil && !requestWaitsForLoad)
    }
    var isTerminal: Bool { status == .closed }
    /// Answers find a context by its pending action, a redirect's outcome by its session, a poll's
    /// end by its PaymentIntent.
    var lookupKeys: [String] {
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

// The record's values as the contract shows them (what is left in StpdCore of the view building
// that moves to StpdDaemon: docs/architecture.md), and the app's inputs as the record keeps them.
extension PaymentConfiguration {
    init(_ stored: PaymentContextRecord.Configuration) {
        self.init(
            requiredBillingAddressFields: stored.requiredBillingAddressFields,
            requiredShippingAddressFields: stored.requiredShippingAddressFields, shippingType: stored.shippingType,
            verifyPrefilledShippingAddress: stored.verifyPrefilledShippingAddress, companyName: stored.companyName,
            canDeletePaymentOptions: stored.canDeletePaymentOptions)
    }
}

extension PaymentContextView.Option {
    init(_ stored: PaymentContextRecord.Option) {
        self.init(id: stored.id, label: stored.label, type: stored.type, paymentMethod: stored.paymentMethod)
    }
}

extension StpdProtocol.ShippingMethod {
    init(_ stored: PaymentContextRecord.ShippingMethod) {
        self.init(identifier: stored.identifier, label: stored.label, detail: stored.detail, amount: stored.amount)
    }
}

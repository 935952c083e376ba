import JSONRPC

/// The SDK's STPPaymentConfiguration, the parts that mean something without a UI.
public struct PaymentConfiguration: Codable, Sendable, Hashable {
    /// `none`, `postalCode` (default), `full`, `name`: what a new card's billing address needs.
    public var requiredBillingAddressFields: String?
    /// Any of `postalAddress`, `emailAddress`, `phoneNumber`, `name`; none by default.
    public var requiredShippingAddressFields: [String]?
    /// `shipping` (default) or `delivery` (an address is accepted without asking the app).
    public var shippingType: String?
    /// Ask again for a shipping address that came from the customer or prefilled (default true).
    public var verifyPrefilledShippingAddress: Bool?
    /// The total's label (default: STPD_MERCHANT_NAME, else the calling app's name).
    public var companyName: String?
    public var canDeletePaymentOptions: Bool?

    public init(
        requiredBillingAddressFields: String? = nil, requiredShippingAddressFields: [String]? = nil,
        shippingType: String? = nil, verifyPrefilledShippingAddress: Bool? = nil, companyName: String? = nil,
        canDeletePaymentOptions: Bool? = nil
    ) {
        self.requiredBillingAddressFields = requiredBillingAddressFields
        self.requiredShippingAddressFields = requiredShippingAddressFields
        self.shippingType = shippingType
        self.verifyPrefilledShippingAddress = verifyPrefilledShippingAddress
        self.companyName = companyName
        self.canDeletePaymentOptions = canDeletePaymentOptions
    }

    static let schema = JSONSchema.object(
        [
            "requiredBillingAddressFields": .enumeration(
                ["none", "postalCode", "full", "name"], "Billing fields a new card needs (default postalCode)"),
            "requiredShippingAddressFields": .array(
                of: .enumeration(["postalAddress", "emailAddress", "phoneNumber", "name"], "A shipping contact field"),
                "Shipping fields required before paying (default none)"),
            "shippingType": .enumeration(
                ["shipping", "delivery"], "shipping (default) asks the app to validate addresses; delivery accepts them"
            ),
            "verifyPrefilledShippingAddress": .boolean(
                "Ask for a prefilled or saved address to be confirmed (default true)"),
            "companyName": .string("Label of the total (default STPD_MERCHANT_NAME, else the calling app's name)"),
            "canDeletePaymentOptions": .boolean("Whether removePaymentMethod is allowed (default true)"),
        ])
}

/// A shipping method the app offers (PKShippingMethod); amounts in minor units.
public struct ShippingMethod: Codable, Sendable, Hashable {
    public var identifier: String
    public var label: String
    public var detail: String?
    public var amount: Int
    public init(identifier: String, label: String, detail: String? = nil, amount: Int) {
        self.identifier = identifier
        self.label = label
        self.detail = detail
        self.amount = amount
    }

    static let schema = JSONSchema.object(
        [
            "identifier": .string("Unique among the methods"), "label": .string("Shown to the customer"),
            "detail": .string("More text, e.g. delivery time"), "amount": .integer("Minor units", minimum: 0),
        ], required: ["identifier", "label", "amount"])
}

/// A payment context (the SDK's STPPaymentContext) as clients see it, in every reply and event.
public struct PaymentContextView: Codable, Sendable, Hashable {
    public struct Option: Codable, Sendable, Hashable {
        public var id: String
        /// The SDK's label, e.g. "Visa 4242".
        public var label: String
        public var type: String
        public var paymentMethod: JSONValue
        public init(id: String, label: String, type: String, paymentMethod: JSONValue) {
            self.id = id
            self.label = label
            self.type = type
            self.paymentMethod = paymentMethod
        }
    }

    public struct SummaryItem: Codable, Sendable, Hashable {
        public var label: String
        /// Minor units.
        public var amount: Int
        /// The amount as a decimal string in the currency's major unit (zero-decimal currencies as is).
        public var decimal: String
        public init(label: String, amount: Int, decimal: String) {
            self.label = label
            self.amount = amount
            self.decimal = decimal
        }
    }

    /// A delegate callback with a completion, waiting for `paymentContext.answer`.
    public struct PendingAction: Codable, Sendable, Hashable {
        public var id: String
        /// `didCreatePaymentResult` or `didUpdateShippingAddress`.
        public var kind: PendingActionKind
        public var deadline: String
        /// didCreatePaymentResult: `{paymentMethod}`; didUpdateShippingAddress: `{address}`.
        public var payload: JSONValue
        public init(id: String, kind: PendingActionKind, deadline: String, payload: JSONValue) {
            self.id = id
            self.kind = kind
            self.deadline = deadline
            self.payload = payload
        }
    }

    public var id: String
    public var object = "payment_context"
    public var customerSession: String
    public var status: PaymentContextStatus
    public var amount: Int
    public var currency: String
    public var country: String
    public var configuration: PaymentConfiguration
    public var validatesShipping: Bool
    public var loading: Bool
    public var loadError: JSONValue?
    public var paymentOptions: [Option]
    public var selectedPaymentMethod: String?
    public var shippingAddress: ShippingAddressParams?
    public var shippingAddressNeedsVerification: Bool
    public var shippingMethods: [ShippingMethod]?
    public var selectedShippingMethod: String?
    public var paymentSummaryItems: [SummaryItem]
    /// amount + the selected shipping method's amount.
    public var paymentAmount: Int
    public var isReadyForPayment: Bool
    /// The SDK's STPPaymentContextState: `none`, `showingRequestedViewController`, `requestingPayment`.
    public var requestState: PaymentRequestState
    /// What the SDK would show a screen for: `paymentOption`, `shippingAddress`, `redirect`; null otherwise.
    public var needs: PaymentContextNeed?
    public var pendingAction: PendingAction?
    /// The redirect session of a stpd-managed PaymentIntent, while it runs.
    public var redirect: String?
    /// The last didFinish: `{status: success|error|userCancellation, error}`.
    public var lastResult: JSONValue?
    /// Why the app refused the last address (didUpdateShippingAddress invalid, or its timeout).
    public var shippingError: JSONValue?
    /// Why saving the accepted address to the customer failed, if it did.
    public var shippingSaveError: JSONValue?
    public var createdAt: String
    public var updatedAt: String

    public init(
        id: String, customerSession: String, status: PaymentContextStatus, amount: Int, currency: String,
        country: String,
        configuration: PaymentConfiguration, validatesShipping: Bool, loading: Bool, loadError: JSONValue?,
        paymentOptions: [Option], selectedPaymentMethod: String?, shippingAddress: ShippingAddressParams?,
        shippingAddressNeedsVerification: Bool, shippingMethods: [ShippingMethod]?, selectedShippingMethod: String?,
        paymentSummaryItems: [SummaryItem], paymentAmount: Int, isReadyForPayment: Bool,
        requestState: PaymentRequestState, needs: PaymentContextNeed?, pendingAction: PendingAction?, redirect: String?,
        lastResult: JSONValue?,
        shippingError: JSONValue?,
        shippingSaveError: JSONValue?, createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.customerSession = customerSession
        self.status = status
        self.amount = amount
        self.currency = currency
        self.country = country
        self.configuration = configuration
        self.validatesShipping = validatesShipping
        self.loading = loading
        self.loadError = loadError
        self.paymentOptions = paymentOptions
        self.selectedPaymentMethod = selectedPaymentMethod
        self.shippingAddress = shippingAddress
        self.shippingAddressNeedsVerification = shippingAddressNeedsVerification
        self.shippingMethods = shippingMethods
        self.selectedShippingMethod = selectedShippingMethod
        self.paymentSummaryItems = paymentSummaryItems
        self.paymentAmount = paymentAmount
        self.isReadyForPayment = isReadyForPayment
        self.requestState = requestState
        self.needs = needs
        self.pendingAction = pendingAction
        self.redirect = redirect
        self.lastResult = lastResult
        self.shippingError = shippingError
        self.shippingSaveError = shippingSaveError
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let schema = JSONSchema.object(
        [
            "id": paymentContextID,
            "object": JSONSchema(["const": "payment_context"]),
            "customerSession": .string("The customer session it uses"),
            "status": .cases(of: PaymentContextStatus.self, "Closed contexts answer InvalidState"),
            "amount": .integer("Minor units, without shipping", minimum: 0),
            "currency": .string("ISO currency (default USD)"),
            "country": .string("ISO country (default US)"),
            "configuration": PaymentConfiguration.schema,
            "validatesShipping": .boolean("The app answers didUpdateShippingAddress"),
            "loading": .boolean("Loading the customer and payment methods"),
            "loadError": .nullable(.ref("ErrorObject")),
            "paymentOptions": .array(
                of: .object(
                    [
                        "id": .string("PaymentMethod id"), "label": .string("e.g. Visa 4242"), "type": .string("card"),
                        "paymentMethod": JSONSchema(["type": "object", "description": "The Stripe PaymentMethod"]),
                    ], required: ["id", "label", "type", "paymentMethod"]), "Card PaymentMethods, sorted by label"),
            "selectedPaymentMethod": .nullable(.string("The selected option's id")),
            "shippingAddress": .nullable(ShippingAddressParams.schema),
            "shippingAddressNeedsVerification": .boolean("Prefilled or from the customer, not yet confirmed"),
            "shippingMethods": .nullable(.array(of: ShippingMethod.schema)),
            "selectedShippingMethod": .nullable(.string("A shipping method identifier")),
            "paymentSummaryItems": .array(
                of: .object(
                    [
                        "label": .string("Label"), "amount": .integer("Minor units"),
                        "decimal": .string("Major units, e.g. 10.99"),
                    ],
                    required: ["label", "amount", "decimal"])),
            "paymentAmount": .integer("amount + shipping, minor units"),
            "isReadyForPayment": .boolean("Not loading and a payment method selected"),
            "requestState": .cases(of: PaymentRequestState.self, "The SDK's internal state"),
            "needs": .nullable(.cases(of: PaymentContextNeed.self, "The input requestPayment waits for")),
            "pendingAction": .nullable(
                .object(
                    [
                        "id": .string("Answer it with paymentContext.answer"),
                        "kind": .cases(of: PendingActionKind.self, "The delegate callback"),
                        "deadline": .string("RFC 3339; unanswered by then it times out", format: "date-time"),
                        "payload": JSONSchema(["type": "object", "description": "{paymentMethod} or {address}"]),
                    ], required: ["id", "kind", "deadline", "payload"])),
            "redirect": .nullable(.string("The redirect session of a managed PaymentIntent")),
            "lastResult": .nullable(
                .object(
                    [
                        "status": .cases(of: PaymentStatus.self, "STPPaymentStatus"),
                        "error": .nullable(.ref("ErrorObject")),
                    ], required: ["status"])),
            "shippingError": .nullable(.ref("ErrorObject")),
            "shippingSaveError": .nullable(.ref("ErrorObject")),
            "createdAt": .string("RFC 3339", format: "date-time"),
            "updatedAt": .string("RFC 3339", format: "date-time"),
        ],
        required: [
            "id", "object", "customerSession", "status", "amount", "currency", "country", "configuration",
            "validatesShipping",
            "loading", "paymentOptions", "shippingAddressNeedsVerification", "paymentSummaryItems", "paymentAmount",
            "isReadyForPayment", "requestState", "createdAt", "updatedAt",
        ])
}

let paymentContextID = JSONSchema.string("The payment context id", pattern: "^pctx_[A-Za-z0-9]+$")

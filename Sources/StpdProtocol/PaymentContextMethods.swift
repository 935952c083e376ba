import JSONRPC
import StripeAPI

let paymentContextErrors: [ErrorDeclaration] = [StpdErrors.notFound, StpdErrors.invalidState] + customerErrors

public struct PaymentContextParams: Codable, Sendable {
    public var context: String
    public init(context: String) { self.context = context }
}

/// `paymentContext.*`: the SDK's STPPaymentContext, its delegate callbacks as events and the two
/// callbacks with a completion as pending actions the app answers.
public enum PaymentContextCreate: RPCMethod {
    public struct Params: Codable, Sendable {
        public var session: String
        public var amount: Int?
        public var currency: String?
        public var country: String?
        public var configuration: PaymentConfiguration?
        /// The app answers didUpdateShippingAddress (the delegate implements it).
        public var validatesShipping: Bool?
        public var prefilledShippingAddress: ShippingAddressParams?
        public var defaultPaymentMethod: String?
        /// Seconds a pending action waits for its answer (default STPD_PENDING_ACTION_TIMEOUT).
        public var pendingActionTimeout: Double?
        public init(
            session: String, amount: Int? = nil, currency: String? = nil, country: String? = nil,
            configuration: PaymentConfiguration? = nil, validatesShipping: Bool? = nil,
            prefilledShippingAddress: ShippingAddressParams? = nil, defaultPaymentMethod: String? = nil,
            pendingActionTimeout: Double? = nil
        ) {
            self.session = session
            self.amount = amount
            self.currency = currency
            self.country = country
            self.configuration = configuration
            self.validatesShipping = validatesShipping
            self.prefilledShippingAddress = prefilledShippingAddress
            self.defaultPaymentMethod = defaultPaymentMethod
            self.pendingActionTimeout = pendingActionTimeout
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.create"
    public static let summary =
        "Creates a payment context over a customer session and starts loading, as STPPaymentContext's initializer."
    public static let description: String? = """
        Loading clears the session's cache, retrieves the customer (its shipping address is copied when the \
        context has none, marked for verification), lists its card PaymentMethods and selects \
        defaultPaymentMethod, else the customer's last selected one, else none. Events: \
        paymentContext.didChange on every change, paymentContext.didFailToLoad when loading fails.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "session": sessionID,
            "amount": .integer("Minor units (default 0)", minimum: 0),
            "currency": .string("ISO currency (default USD)", pattern: "^[A-Za-z]{3}$"),
            "country": .string("ISO country (default US)", pattern: "^[A-Za-z]{2}$"),
            "configuration": PaymentConfiguration.schema,
            "validatesShipping": .boolean("The app answers didUpdateShippingAddress pending actions (default false)"),
            "prefilledShippingAddress": ShippingAddressParams.schema,
            "defaultPaymentMethod": paymentMethodID,
            "pendingActionTimeout": .number("Seconds a pending action waits (default 600)", minimum: 1),
        ], required: ["session"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public typealias PaymentContextGet = ObjectGet<PaymentContextListing>
public typealias PaymentContextList = ObjectList<PaymentContextListing>

/// Payment contexts as `paymentContext.get` and `paymentContext.list` show them.
public enum PaymentContextListing: ListedKind {
    public typealias IDParams = PaymentContextParams
    public typealias View = PaymentContextView
    public typealias Status = PaymentContextStatus
    public static let prefix = "paymentContext"
    public static let idSchema = paymentContextID
    public static let component = "PaymentContext"
    public static let plural = "contexts"
    public static let getSummary = "A payment context's full state."
    public static let listSummary = "A page of the caller's payment contexts (root: everyone's), oldest first."
    public static let statusDescription = "Only contexts with this status"
}

public enum PaymentContextRetryLoading: RPCMethod {
    public typealias Params = PaymentContextParams
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.retryLoading"
    public static let summary = "Loads again (after didFailToLoad), as retryLoading."
    public static let paramsSchema = JSONSchema.object(["context": paymentContextID], required: ["context"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

/// A summary item the app sets (PKPaymentSummaryItem); the last one is the total.
public struct PaymentSummaryItemInput: Codable, Sendable, Hashable {
    public var label: String
    /// Minor units.
    public var amount: Int
    public init(label: String, amount: Int) {
        self.label = label
        self.amount = amount
    }
}

public enum PaymentContextUpdate: RPCMethod {
    public struct Params: Codable, Sendable {
        /// What the payment comes to: the schema takes at most one of `amount` and `paymentSummaryItems`.
        public enum Total: Sendable {
            case amount(Int)
            /// The SDK's settable `paymentSummaryItems`; the last is the total.
            case paymentSummaryItems([PaymentSummaryItemInput])
        }
        public var context: String
        public var total: Total?
        public var currency: String?
        public var country: String?
        public init(context: String, total: Total? = nil, currency: String? = nil, country: String? = nil) {
            self.context = context
            self.total = total
            self.currency = currency
            self.country = country
        }

        enum CodingKeys: String, CodingKey { case context, amount, currency, country, paymentSummaryItems }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            context = try container.decode(String.self, forKey: .context)
            currency = try container.decodeIfPresent(String.self, forKey: .currency)
            country = try container.decodeIfPresent(String.self, forKey: .country)
            switch try container.exactlyOne(of: [.amount, .paymentSummaryItems], orNone: true) {
            case .amount?: total = .amount(try container.decode(Int.self, forKey: .amount))
            case .paymentSummaryItems?:
                total = .paymentSummaryItems(
                    try container.decode([PaymentSummaryItemInput].self, forKey: .paymentSummaryItems))
            default: total = nil
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(context, forKey: .context)
            switch total {
            case .amount(let amount)?: try container.encode(amount, forKey: .amount)
            case .paymentSummaryItems(let items)?: try container.encode(items, forKey: .paymentSummaryItems)
            case nil: break
            }
            try container.encodeIfPresent(currency, forKey: .currency)
            try container.encodeIfPresent(country, forKey: .country)
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.update"
    public static let summary = "Sets paymentAmount, paymentSummaryItems, paymentCurrency or paymentCountry."
    public static let description: String? = """
        As the SDK's setters: paymentSummaryItems replaces the items stpd builds (the last is the total, \
        its amount the payment amount; with a shipping method selected, a shipping item goes before the \
        total and the total grows by its amount); setting amount drops them again. An empty list is \
        taken, as the SDK takes it: no items, and a payment amount of the shipping method's alone. Give \
        amount or paymentSummaryItems, not both.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "context": paymentContextID, "amount": .integer("Minor units", minimum: 0),
            "currency": .string("ISO currency", pattern: "^[A-Za-z]{3}$"),
            "country": .string("ISO country", pattern: "^[A-Za-z]{2}$"),
            "paymentSummaryItems": .array(
                of: .object(
                    ["label": .string("Label"), "amount": .integer("Minor units", minimum: 0)],
                    required: ["label", "amount"]),
                "The items; the last is the total (none: no items, and shipping alone is paid)"),
        ], required: ["context"]
    ).exactlyOne(of: ["amount", "paymentSummaryItems"], orNone: true)
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public enum PaymentContextSelectPaymentMethod: RPCMethod {
    public struct Params: Codable, Sendable {
        public var context: String
        public var paymentMethod: String
        public init(context: String, paymentMethod: String) {
            self.context = context
            self.paymentMethod = paymentMethod
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.selectPaymentMethod"
    public static let summary =
        "Selects one of the paymentOptions (remembered as the customer's last selected); continues a requestPayment waiting for it."
    public static let paramsSchema = JSONSchema.object(
        ["context": paymentContextID, "paymentMethod": paymentMethodID], required: ["context", "paymentMethod"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = paymentContextErrors
}

public enum PaymentContextAddCard: RPCMethod {
    public struct Params: Codable, Sendable {
        public var context: String
        public var card: CardInput
        public init(context: String, card: CardInput) {
            self.context = context
            self.card = card
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.addCard"
    public static let summary =
        "Creates a card PaymentMethod, attaches it through the adapter, selects it and remembers it as last selected."
    public static let paramsSchema = JSONSchema.object(
        ["context": paymentContextID, "card": SourceConstructor.cardSchema], required: ["context", "card"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.cardInvalid] + paymentContextErrors
}

public enum PaymentContextRemovePaymentMethod: RPCMethod {
    public typealias Params = PaymentContextSelectPaymentMethod.Params
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.removePaymentMethod"
    public static let summary =
        "Detaches a payment option through the adapter; if it was selected, the first remaining one is selected."
    public static let paramsSchema = JSONSchema.object(
        ["context": paymentContextID, "paymentMethod": paymentMethodID], required: ["context", "paymentMethod"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = paymentContextErrors
}

public enum PaymentContextSetShippingAddress: RPCMethod {
    public struct Params: Codable, Sendable {
        public var context: String
        public var address: ShippingAddressParams
        public init(context: String, address: ShippingAddressParams) {
            self.context = context
            self.address = address
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.setShippingAddress"
    public static let summary =
        "The customer submitted a shipping address: validated by the app when it said so, else accepted as the SDK does."
    public static let description: String? = """
        An address that fails the configuration's requiredShippingAddressFields by the SDK's rules is \
        refused with ShippingAddressIncomplete naming what is missing, as the SDK's form does not submit \
        it. With validatesShipping and shippingType shipping, a didUpdateShippingAddress pending action asks the \
        app (answer valid with shippingMethods and selectedShippingMethod, or invalid with an error: \
        paymentContext.shippingInvalid). An accepted address is set, the shipping methods kept by the SDK's \
        rule, and saved to the customer through the adapter afterwards (paymentContext.shippingSaveFailed \
        if that fails). A requestPayment waiting for the address goes on.
        """
    public static let paramsSchema = JSONSchema.object(
        ["context": paymentContextID, "address": ShippingAddressParams.schema], required: ["context", "address"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState, StpdErrors.shippingAddressIncomplete]
}

public enum PaymentContextSelectShippingMethod: RPCMethod {
    public struct Params: Codable, Sendable {
        public var context: String
        public var shippingMethod: String
        public init(context: String, shippingMethod: String) {
            self.context = context
            self.shippingMethod = shippingMethod
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.selectShippingMethod"
    public static let summary = "Selects one of the shippingMethods; the total changes with it."
    public static let paramsSchema = JSONSchema.object(
        ["context": paymentContextID, "shippingMethod": .string("A shipping method identifier")],
        required: ["context", "shippingMethod"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public enum PaymentContextRequestPayment: RPCMethod {
    public struct Params: Codable, Sendable {
        public struct ManagedIntent: Codable, Sendable {
            public var clientSecret: String
            public var returnURL: String?
            public init(clientSecret: String, returnURL: String? = nil) {
                self.clientSecret = clientSecret
                self.returnURL = returnURL
            }
        }
        public var context: String
        /// Beyond the SDK: stpd confirms this PaymentIntent with the selection instead of asking the app.
        public var paymentIntent: ManagedIntent?
        public init(context: String, paymentIntent: ManagedIntent? = nil) {
            self.context = context
            self.paymentIntent = paymentIntent
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.requestPayment"
    public static let summary =
        "Runs the SDK's requestPayment: asks for missing input, then didCreatePaymentResult (or confirms a PaymentIntent), then didFinish."
    public static let description: String? = """
        After loading: a failed load finishes with error; a request already running is ignored; no \
        selection → needs paymentOption (paymentContext.needsInput); a required or unverified shipping \
        address → needs shippingAddress; otherwise a didCreatePaymentResult pending action carries the \
        PaymentMethod and the app answers success, error or userCancellation → paymentContext.didFinish. \
        With paymentIntent, stpd confirms it with the selected PaymentMethod instead, runs a 3-D Secure or \
        bank redirect through a redirect session (needs redirect) and finishes with the PaymentIntent's outcome.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "context": paymentContextID,
            "paymentIntent": .object(
                [
                    "clientSecret": paymentIntentSecret,
                    "returnURL": returnURLSchema,
                ], required: ["clientSecret"], description: "Let stpd confirm this PaymentIntent"),
        ], required: ["context"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public enum PaymentContextAnswer: RPCMethod {
    public struct Params: Codable, Sendable {
        public struct Failure: Codable, Sendable, Hashable {
            public var message: String
            public var code: String?
            public init(message: String, code: String? = nil) {
                self.message = message
                self.code = code
            }
        }
        public var action: String
        /// didCreatePaymentResult: `success`, `error` or `userCancellation`; didUpdateShippingAddress: `valid` or `invalid`.
        public var status: PendingActionAnswer
        public var error: Failure?
        public var shippingMethods: [ShippingMethod]?
        public var selectedShippingMethod: String?
        public init(
            action: String, status: PendingActionAnswer, error: Failure? = nil,
            shippingMethods: [ShippingMethod]? = nil,
            selectedShippingMethod: String? = nil
        ) {
            self.action = action
            self.status = status
            self.error = error
            self.shippingMethods = shippingMethods
            self.selectedShippingMethod = selectedShippingMethod
        }
    }
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.answer"
    public static let summary = "Completes a pending action (the delegate's completion block)."
    public static let paramsSchema = JSONSchema.object(
        [
            "action": .string("The pending action id", pattern: "^pact_[A-Za-z0-9]+$"),
            "status": .cases(of: PendingActionAnswer.self, "The completion's status"),
            "error": .object(
                ["message": .string("Shown to the customer"), "code": .string("The app's own code")],
                required: ["message"]),
            "shippingMethods": .array(
                of: ShippingMethod.schema, "didUpdateShippingAddress valid: the methods for this address"),
            "selectedShippingMethod": .string("didUpdateShippingAddress valid: the preselected method"),
        ], required: ["action", "status"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.pendingActionGone, StpdErrors.permissionDenied]
}

public enum PaymentContextCancel: RPCMethod {
    public typealias Params = PaymentContextParams
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.cancel"
    public static let summary =
        "The customer cancelled while requestPayment waited for input: didFinish(userCancellation)."
    public static let paramsSchema = JSONSchema.object(["context": paymentContextID], required: ["context"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public enum PaymentContextClose: RPCMethod {
    public typealias Params = PaymentContextParams
    public typealias Result = PaymentContextView
    public static let name = "paymentContext.close"
    public static let summary = "Closes a context (a pending action is dropped); it stays readable."
    public static let paramsSchema = JSONSchema.object(["context": paymentContextID], required: ["context"])
    public static let resultSchema = JSONSchema.ref("PaymentContext")
    public static let errors = [StpdErrors.notFound]
}

import JSONRPC
import StpdValues
import StripeAPI

let paymentIntentSecret = PaymentIntentNaming.secretSchema

/// `paymentIntent.*` and `setupIntent.*`: intents by client secret, as the SDK's STPPaymentHandler
/// confirms them and handles their next actions, and the intents stpd polls for the customer.
/// Each method is one declaration for both kinds of intent.
public typealias PaymentIntentRetrieve = IntentRetrieve<PaymentIntentNaming>
public typealias PaymentIntentConfirm = IntentConfirm<PaymentIntentNaming>
public typealias PaymentIntentHandleNextAction = IntentHandleNextAction<PaymentIntentNaming>
public typealias PaymentIntentVerifyMicrodeposits = IntentVerifyMicrodeposits<PaymentIntentNaming>
public typealias PaymentIntentGet = IntentGet<PaymentIntentNaming>
public typealias PaymentIntentList = IntentList<PaymentIntentNaming>
public typealias PaymentIntentStopPolling = IntentStopPolling<PaymentIntentNaming>
public typealias SetupIntentRetrieve = IntentRetrieve<SetupIntentNaming>
public typealias SetupIntentConfirm = IntentConfirm<SetupIntentNaming>
public typealias SetupIntentHandleNextAction = IntentHandleNextAction<SetupIntentNaming>
public typealias SetupIntentVerifyMicrodeposits = IntentVerifyMicrodeposits<SetupIntentNaming>
public typealias SetupIntentGet = IntentGet<SetupIntentNaming>
public typealias SetupIntentList = IntentList<SetupIntentNaming>
public typealias SetupIntentStopPolling = IntentStopPolling<SetupIntentNaming>

/// What the methods that may end an action can answer besides Stripe's errors.
private let handlingErrors = [
    StpdErrors.disabled, StpdErrors.redirectOpenFailed, StpdErrors.invalidState, StpdErrors.tooManyPolls,
]

public enum IntentRetrieve<K: IntentNaming>: RPCMethod {
    public struct Params: Codable, Sendable {
        public var clientSecret: String
        public init(clientSecret: String) { self.clientSecret = clientSecret }
    }
    public typealias Result = IntentRetrieved<K>
    public static var name: String { "\(K.prefix).retrieve" }
    public static var summary: String {
        "Fetches a \(K.noun) with its client secret, with its next action (nothing is opened or polled)."
    }
    public static var paramsSchema: JSONSchema {
        .object(["clientSecret": K.secretSchema], required: ["clientSecret"])
    }
    public static var resultSchema: JSONSchema { Result.schema }
    public static var errors: [ErrorDeclaration] { stripeCallErrors }
}

public enum IntentConfirm<K: IntentNaming>: RPCMethod {
    public struct Params: Codable, Sendable {
        public var clientSecret: String
        public var paymentMethod: PaymentMethodInput
        public var returnURL: String?
        /// Start the redirect session at once when one is needed (else it waits for redirect.start).
        public var start: RedirectStartOptions?
        public var paymentMethodOptions: ConfirmPaymentMethodOptions?
        /// A PaymentIntent's only.
        public var shipping: ConfirmShipping?
        public var voucher: VoucherHandling?
        public init(
            clientSecret: String, paymentMethod: PaymentMethodInput, returnURL: String? = nil,
            start: RedirectStartOptions? = nil, paymentMethodOptions: ConfirmPaymentMethodOptions? = nil,
            shipping: ConfirmShipping? = nil, voucher: VoucherHandling? = nil
        ) {
            self.voucher = voucher
            self.clientSecret = clientSecret
            self.paymentMethod = paymentMethod
            self.returnURL = returnURL
            self.start = start
            self.paymentMethodOptions = paymentMethodOptions
            self.shipping = shipping
        }
    }
    public typealias Result = IntentAnswer<K>
    public static var name: String { "\(K.prefix).confirm" }
    public static var summary: String {
        "Confirms a \(K.noun) with a saved payment method or a new one of any type, then handles its next action as STPPaymentHandler does."
    }
    public static var description: String? {
        """
        result says how STPPaymentHandler ended it: succeeded (a display kind such as a voucher counts: \
        show nextAction.details), canceled, failed (error says why: NextActionUnsupported, \
        ReturnURLRequired, PaymentFailed), or pending: a redirect kind opened a redirect session \
        (redirect; started at once with start), or a kind that awaits the customer elsewhere started a \
        poll (poll). Either way \(K.prefix).finished announces the end. docs/next-actions.md lists every \
        next action type and how it ends.
        """
    }
    public static var paramsSchema: JSONSchema {
        .object(
            [
                "clientSecret": K.secretSchema,
                "paymentMethod": PaymentMethodInput.schema,
                "returnURL": returnURLSchema,
                "start": startSchema,
                "paymentMethodOptions": ConfirmPaymentMethodOptions.schema,
                "shipping": ConfirmShipping.schema,
                "voucher": VoucherHandling.schema,
            ], required: ["clientSecret", "paymentMethod"])
    }
    public static var resultSchema: JSONSchema { Result.schema }
    public static var errors: [ErrorDeclaration] { handlingErrors + [StpdErrors.cardInvalid] + stripeCallErrors }
}

let returnURLSchema = JSONSchema.string(
    "Where the bank or 3-D Secure page sends the customer back: an absolute URL (your app's URL scheme), or \"loopback\" for stpd's own return on 127.0.0.1 (http://127.0.0.1:PORT/return/TOKEN), which needs no URL scheme; Stripe answers 3-D Secure with a redirect only when it is given"
)

let startSchema = JSONSchema.object(
    [
        "mode": .enumeration(RedirectMode.allCases.map(\.rawValue), "The SDK's start variant (default automatic)"),
        "opener": .enumeration(RedirectOpener.allCases.map(\.rawValue), "Who opens the URL (default app)"),
    ], description: "Start the redirect session at once, if one is needed")

public enum IntentHandleNextAction<K: IntentNaming>: RPCMethod {
    public struct Params: Codable, Sendable {
        public var clientSecret: String
        /// The return URL the intent was confirmed with (Cash App and Swish need it).
        public var returnURL: String?
        public var start: RedirectStartOptions?
        public var voucher: VoucherHandling?
        public init(
            clientSecret: String, returnURL: String? = nil, start: RedirectStartOptions? = nil,
            voucher: VoucherHandling? = nil
        ) {
            self.voucher = voucher
            self.clientSecret = clientSecret
            self.returnURL = returnURL
            self.start = start
        }
    }
    public typealias Result = IntentAnswer<K>
    public static var name: String { "\(K.prefix).handleNextAction" }
    public static var summary: String {
        "Handles the next action of a \(K.noun) confirmed elsewhere (by your server), as STPPaymentHandler.handleNextAction does."
    }
    public static var description: String? {
        "Fetches the \(K.noun) and answers as \(K.prefix).confirm does; a poll already running for it is replaced."
    }
    public static var paramsSchema: JSONSchema {
        .object(
            [
                "clientSecret": K.secretSchema, "returnURL": returnURLSchema, "start": startSchema,
                "voucher": VoucherHandling.schema,
            ],
            required: ["clientSecret"])
    }
    public static var resultSchema: JSONSchema { Result.schema }
    public static var errors: [ErrorDeclaration] { handlingErrors + stripeCallErrors }
}

public enum IntentVerifyMicrodeposits<K: IntentNaming>: RPCMethod {
    public struct Params: Codable, Sendable {
        public typealias Proof = VerifyMicrodepositsParams.Proof
        public var clientSecret: String
        /// The two deposits, in cents (`amounts`), or the descriptor code of the one deposit (SM
        /// followed by four characters, `descriptorCode`): the schema takes exactly one.
        public var proof: Proof
        public init(clientSecret: String, proof: Proof) {
            self.clientSecret = clientSecret
            self.proof = proof
        }

        enum CodingKeys: String, CodingKey { case clientSecret, amounts, descriptorCode }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            clientSecret = try container.decode(String.self, forKey: .clientSecret)
            switch try container.exactlyOne(of: [.amounts, .descriptorCode]) {
            case .descriptorCode: proof = .descriptorCode(try container.decode(String.self, forKey: .descriptorCode))
            default:
                let amounts = try container.decode([Int].self, forKey: .amounts)
                guard amounts.count == 2 else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .amounts, in: container, debugDescription: "give the two deposits")
                }
                proof = .amounts(amounts[0], amounts[1])
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(clientSecret, forKey: .clientSecret)
            switch proof {
            case .amounts(let first, let second): try container.encode([first, second], forKey: .amounts)
            case .descriptorCode(let code): try container.encode(code, forKey: .descriptorCode)
            }
        }
    }
    public typealias Result = IntentAnswer<K>
    public static var name: String { "\(K.prefix).verifyMicrodeposits" }
    public static var summary: String {
        "Verifies the bank account of a \(K.noun) awaiting verify_with_microdeposits, with the two amounts or the descriptor code."
    }
    public static var description: String? {
        "Give exactly one of amounts and descriptorCode (microdeposit_type in the next action's details says which). Answers as \(K.prefix).confirm does."
    }
    public static var paramsSchema: JSONSchema {
        .object(
            [
                "clientSecret": K.secretSchema,
                "amounts": JSONSchema([
                    "type": "array", "items": ["type": "integer", "minimum": 1, "maximum": 99], "minItems": 2,
                    "maxItems": 2, "description": "The two microdeposits, in cents",
                ]),
                "descriptorCode": .string(
                    "The statement descriptor code of the one 0.01 deposit", pattern: "^SM[A-Za-z0-9]{4}$"),
            ], required: ["clientSecret"]
        ).exactlyOne(of: ["amounts", "descriptorCode"])
    }
    public static var resultSchema: JSONSchema { Result.schema }
    public static var errors: [ErrorDeclaration] { stripeCallErrors }
}

public struct IntentIDParams: Codable, Sendable {
    public var id: String
    public init(id: String) { self.id = id }
}

public typealias IntentGet<K: IntentNaming> = ObjectGet<IntentListing<K>>
public typealias IntentList<K: IntentNaming> = ObjectList<IntentListing<K>>

/// The intents stpd polls or polled, of one kind, as `<kind>.get` and `<kind>.list` show them.
public enum IntentListing<K: IntentNaming>: ListedKind {
    public typealias IDParams = IntentIDParams
    public typealias View = IntentView
    public typealias Status = IntentPollStatus
    public static var prefix: String { K.prefix }
    public static var idSchema: JSONSchema { K.idSchema }
    public static var component: String { "Intent" }
    public static var plural: String { "intents" }
    public static var getSummary: String { "A \(K.noun) stpd polls or polled, as last read, with its poll." }
    public static var listSummary: String {
        "A page of the \(K.noun)s stpd polls or polled for the caller (root: everyone's), oldest first."
    }
    public static var statusDescription: String { "Only those whose poll has this status" }
}

public enum IntentStopPolling<K: IntentNaming>: RPCMethod {
    public typealias Params = IntentIDParams
    public typealias Result = IntentView
    public static var name: String { "\(K.prefix).stopPolling" }
    public static var summary: String {
        "Stops polling a \(K.noun); the poll never reports (\(K.prefix).pollStopped)."
    }
    public static var paramsSchema: JSONSchema { .object(["id": K.idSchema], required: ["id"]) }
    public static var resultSchema: JSONSchema { .ref("Intent") }
    public static var errors: [ErrorDeclaration] { [StpdErrors.notFound] }
}

extension IntentView: Identified {}

import JSONRPC

/// A failed Stripe call, typed as the SDK's error model (spec §7.5), plus the request id and HTTP
/// status the daemon reports. `rpcData` is the JSON-RPC error `data`; `kind` picks the 3xxx code.
public struct StripeError: Error, Sendable, Hashable {
    public enum Kind: String, Sendable, CaseIterable {
        case card, invalidRequest, api, authentication, rateLimit, idempotency
        /// No HTTP response: refused, reset, TLS failure, timeout (SDK code 40).
        case connection
        /// A response that is neither the expected object nor a Stripe error (SDK "failed to parse", 60).
        case decoding
        /// An ephemeral key the app's backend returned could not be used (SDK code 1000).
        case ephemeralKeyDecoding
    }

    /// The SDK's card error codes (`com.stripe.lib:<sdkName>`); several API codes share one.
    public enum CardErrorCode: String, Sendable, CaseIterable {
        case incorrectNumber = "IncorrectNumber"
        case invalidNumber = "InvalidNumber"
        case invalidExpiryMonth = "InvalidExpiryMonth"
        case invalidExpiryYear = "InvalidExpiryYear"
        case invalidCVC = "InvalidCVC"
        case expiredCard = "ExpiredCard"
        case cardDeclined = "CardDeclined"
        case processingError = "ProcessingError"
        case incorrectZip = "IncorrectZip"

        /// The SDK's mapping of the API `code`; `incorrect_cvc` → InvalidCVC is the SDK's (sic).
        public init?(apiCode: String) {
            switch apiCode {
            case "incorrect_number": self = .incorrectNumber
            case "invalid_number": self = .invalidNumber
            case "invalid_expiry_month": self = .invalidExpiryMonth
            case "invalid_expiry_year": self = .invalidExpiryYear
            case "invalid_cvc", "incorrect_cvc": self = .invalidCVC
            case "expired_card": self = .expiredCard
            case "card_declined": self = .cardDeclined
            case "processing_error": self = .processingError
            case "incorrect_zip": self = .incorrectZip
            default: return nil
            }
        }

        /// The SDK's own user-facing text (it replaces the server message when a code maps);
        /// IncorrectZip has none.
        public var userMessage: String? {
            switch self {
            case .incorrectNumber, .invalidNumber: "Your card's number is invalid"
            case .invalidExpiryMonth: "Your card's expiration month is invalid"
            case .invalidExpiryYear: "Your card's expiration year is invalid"
            case .invalidCVC: "Your card's security code is invalid"
            case .expiredCard: "Your card has expired"
            case .cardDeclined: "Your card was declined"
            case .processingError: "There was an error processing your card -- try again in a few seconds"
            case .incorrectZip: nil
            }
        }
    }

    public static let genericMessage = "There was an unexpected error -- try again in a few seconds"

    public var kind: Kind
    /// Stripe's `error.type` and `error.code`, as sent.
    public var type: String?
    public var code: String?
    public var cardErrorCode: CardErrorCode?
    /// Only when the card code is CardDeclined, as in the SDK (21.4.0+).
    public var declineCode: String?
    /// As the API sends it (`card[number]`); the SDK's camelCasing is an iOS-ism clients don't need.
    public var param: String?
    /// The developer message: Stripe's `message`, or stpd's description of what went wrong.
    public var message: String
    public var requestID: String?
    public var httpStatus: Int?
    /// For `.connection`: how the last attempt failed (not part of `rpcData`).
    public var fault: TransportFault?

    public init(
        kind: Kind, type: String? = nil, code: String? = nil, cardErrorCode: CardErrorCode? = nil,
        declineCode: String? = nil, param: String? = nil, message: String, requestID: String? = nil,
        httpStatus: Int? = nil, fault: TransportFault? = nil
    ) {
        self.kind = kind
        self.type = type
        self.code = code
        self.cardErrorCode = cardErrorCode
        self.declineCode = declineCode
        self.param = param
        self.message = message
        self.requestID = requestID
        self.httpStatus = httpStatus
        self.fault = fault
    }

    /// The SDK's rule for `{"error": {...}}` (nil when `body` has no `error` object), with the newest
    /// SDK's 401 → authentication and stpd's own 429 → rateLimit and `idempotency_error` kinds.
    public init?(body: JSONValue, httpStatus: Int?, requestID: String?) {
        guard let error = body["error"]?.objectValue else { return nil }
        let type = error["type"]?.stringValue
        let code = error["code"]?.stringValue
        let kind: Kind =
            switch (httpStatus, type) {
            case (401, _): .authentication
            case (429, _), (_, "rate_limit_error"): .rateLimit
            case (_, "card_error"): .card
            case (_, "invalid_request_error"): .invalidRequest
            case (_, "idempotency_error"): .idempotency
            case (_, "authentication_error"): .authentication
            default: .api
            }
        // The SDK maps codes for every type but api_error.
        let card = type == "api_error" ? nil : code.flatMap(CardErrorCode.init(apiCode:))
        self.init(
            kind: kind, type: type, code: code, cardErrorCode: card,
            declineCode: card == .cardDeclined ? error["decline_code"]?.stringValue : nil,
            param: error["param"]?.stringValue,
            message: error["message"]?.stringValue ?? "Could not interpret the error response from Stripe",
            requestID: requestID, httpStatus: httpStatus)
    }

    /// What an app may show a user, as v19/v21 choose it: the SDK's text for a mapped card code, the
    /// generic text for api_error or when Stripe sent no message, else Stripe's message.
    public var userMessage: String {
        if let text = cardErrorCode?.userMessage { return text }
        if type == nil || type == "api_error" { return Self.genericMessage }
        return message
    }

    /// The JSON-RPC error `data`: always these seven keys, null when unknown, so clients see one shape.
    public var rpcData: JSONValue {
        func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        return [
            "type": text(type), "code": text(code), "decline_code": text(declineCode), "param": text(param),
            "message": text(message), "request_id": text(requestID),
            "http_status": httpStatus.map { .int(Int64($0)) } ?? .null,
        ]
    }
}

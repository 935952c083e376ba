import JSONRPC
import StpdValues

/// `appRequest.*`: the app's answer to an `appRequest.pending` event (app adapters and app key providers).
public enum AppRequestAnswer: RPCMethod {
    public struct Params: Codable, Sendable {
        public struct Failure: Codable, Sendable {
            public var message: String
            public var code: String?
            public init(message: String, code: String? = nil) {
                self.message = message
                self.code = code
            }
        }
        /// The answer: the schema takes exactly one of `result` and `error`.
        public enum Answer: Sendable {
            /// What the operation asked for (null is a result, as a detach answers).
            case result(JSONValue)
            case error(Failure)
        }
        public var request: String
        public var answer: Answer
        public init(request: String, answer: Answer) {
            self.request = request
            self.answer = answer
        }

        enum CodingKeys: String, CodingKey { case request, result, error }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            request = try container.decode(String.self, forKey: .request)
            switch try container.exactlyOne(of: [.result, .error]) {
            case .error: answer = .error(try container.decode(Failure.self, forKey: .error))
            default: answer = .result(try container.decode(JSONValue.self, forKey: .result))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(request, forKey: .request)
            switch answer {
            case .result(let result): try container.encode(result, forKey: .result)
            case .error(let failure): try container.encode(failure, forKey: .error)
            }
        }
    }
    public struct Result: Codable, Sendable {
        public var answered: Bool
        public init() { answered = true }
    }
    public static let name = "appRequest.answer"
    public static let summary = "Answers an appRequest.pending event with its result, or with an error."
    public static let description: String? = """
        app customer sessions ask for retrieveCustomer (answer: the Stripe customer), listPaymentMethods \
        (a list object or an array of PaymentMethods), attachPaymentMethod / detachPaymentMethod \
        ({paymentMethod}), updateShipping ({shipping}); app key providers ask for createEphemeralKey \
        ({apiVersion}; answer: Stripe's ephemeral key JSON). Give exactly one of result and error. Only \
        the uid that owns the request (or root) may answer; a request answers once.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "request": .string("The request id (the event's objectId)", pattern: "^areq_[A-Za-z0-9]+$"),
            "result": JSONSchema(["description": "What the operation asked for"]),
            "error": .object(
                ["message": .string("Why the app could not do it"), "code": .string("The app's own code")],
                required: ["message"]),
        ], required: ["request"]
    ).exactlyOne(of: ["result", "error"])
    public static let resultSchema = JSONSchema.object(
        ["answered": JSONSchema(["const": true])], required: ["answered"])
    public static let errors = [StpdErrors.notFound, StpdErrors.permissionDenied, StpdErrors.invalidState]
}

/// An app request of the caller's as its events show it.
public enum AppRequestGet: RPCMethod {
    public struct Params: Codable, Sendable {
        public var request: String
        public init(request: String) { self.request = request }
    }
    /// The request as its last event carried it (`AppRequestEvent.object`).
    public typealias Result = JSONValue
    public static let name = "appRequest.get"
    public static let summary =
        "An app request of the caller's as its last event showed it: pending, or how it ended (until the retention sweep removes it)."
    public static let paramsSchema = JSONSchema.object(
        ["request": .string("The request id (the event's objectId)", pattern: "^areq_[A-Za-z0-9]+$")],
        required: ["request"])
    public static let resultSchema = AppRequestEvent.object
    public static let errors = [StpdErrors.notFound]
}

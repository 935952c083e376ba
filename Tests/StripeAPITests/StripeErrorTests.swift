import Foundation
import JSONRPC
import StripeAPI
import Testing

func response(_ status: Int, _ json: String, requestID: String? = "req_123") -> HTTPResponseData {
    var headers: HTTPHeaders = [:]
    if let requestID { headers["request-id"] = requestID }
    return HTTPResponseData(status: status, headers: headers, body: Data(json.utf8))
}

func failure<T>(_ result: Result<T, StripeError>) -> StripeError? {
    if case .failure(let e) = result { e } else { nil }
}

@Test func cardDeclinedKeepsDeclineCode() throws {
    let body =
        #"{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","#
        + #""param":"","message":"Your card has insufficient funds."}}"#
    let error = try #require(failure(ResponseParser.parseJSON(response(402, body))))
    #expect(error.kind == .card)
    #expect(error.cardErrorCode == .cardDeclined)
    #expect(error.declineCode == "insufficient_funds")
    #expect(error.userMessage == "Your card was declined")
    #expect(
        error.rpcData == [
            "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "param": "",
            "message": "Your card has insufficient funds.", "request_id": "req_123", "http_status": 402,
        ])
}

@Test func declineCodeOnlyForCardDeclined() throws {
    let body = #"{"error":{"type":"card_error","code":"incorrect_cvc","decline_code":"x","param":"cvc","message":"m"}}"#
    let error = try #require(failure(ResponseParser.parseJSON(response(402, body))))
    #expect(error.cardErrorCode == .invalidCVC)  // the SDK's incorrect_cvc → InvalidCVC
    #expect(error.declineCode == nil)
    #expect(error.param == "cvc")
    #expect(error.userMessage == "Your card's security code is invalid")
}

@Test func cardCodeMapping() {
    let table: [String: StripeError.CardErrorCode] = [
        "incorrect_number": .incorrectNumber, "invalid_number": .invalidNumber,
        "invalid_expiry_month": .invalidExpiryMonth, "invalid_expiry_year": .invalidExpiryYear,
        "invalid_cvc": .invalidCVC, "incorrect_cvc": .invalidCVC, "expired_card": .expiredCard,
        "card_declined": .cardDeclined, "processing_error": .processingError, "incorrect_zip": .incorrectZip,
    ]
    for (code, expected) in table { #expect(StripeError.CardErrorCode(apiCode: code) == expected) }
    #expect(StripeError.CardErrorCode(apiCode: "resource_missing") == nil)
    #expect(StripeError.CardErrorCode.incorrectZip.userMessage == nil)
}

@Test func kindsByTypeAndStatus() throws {
    func kind(_ status: Int, _ type: String?, code: String? = nil) -> StripeError? {
        var error: [String: JSONValue] = ["message": "m"]
        if let type { error["type"] = .string(type) }
        if let code { error["code"] = .string(code) }
        return StripeError(body: ["error": .object(error)], httpStatus: status, requestID: nil)
    }
    #expect(kind(400, "invalid_request_error")?.kind == .invalidRequest)
    #expect(kind(401, "invalid_request_error")?.kind == .authentication)
    #expect(kind(429, "invalid_request_error", code: "rate_limit")?.kind == .rateLimit)
    #expect(kind(500, "api_error")?.kind == .api)
    #expect(kind(400, "idempotency_error")?.kind == .idempotency)
    #expect(kind(400, "something_new")?.kind == .api)
    #expect(kind(400, nil)?.kind == .api)
    // api_error never maps card codes and shows the generic text.
    let api = try #require(kind(500, "api_error", code: "card_declined"))
    #expect(api.cardErrorCode == nil)
    #expect(api.userMessage == StripeError.genericMessage)
    #expect(StripeError(body: ["id": "src_1"], httpStatus: 200, requestID: nil) == nil)
}

@Test func missingMessageAndRequestID() throws {
    let error = try #require(
        failure(ResponseParser.parseJSON(response(400, #"{"error":{"type":"invalid_request_error"}}"#, requestID: nil)))
    )
    #expect(error.message == "Could not interpret the error response from Stripe")
    #expect(error.rpcData["request_id"] == .null)
    #expect(error.rpcData["code"] == .null)
}

private struct Source: Decodable, Equatable {
    enum Status: String, TolerantStringEnum {
        case pending, chargeable, consumed, canceled, failed, unknown
    }
    var id: String
    var status: Status
    var amount: Int?
    var livemode: Bool
}

@Test func typedSuccessTolerantEnumsAndNulls() throws {
    let body = #"{"id":"src_1","status":"CHARGEABLE","amount":null,"livemode":false,"extra":{"a":null}}"#
    let source = try ResponseParser.parse(response(200, body), as: Source.self).get()
    #expect(source == Source(id: "src_1", status: .chargeable, amount: nil, livemode: false))
    let odd = try ResponseParser.parse(
        response(200, #"{"id":"s","status":"brand_new","livemode":true}"#), as: Source.self
    ).get()
    #expect(odd.status == .unknown)
}

@Test func typedModelDecodesRegardlessOfStatus() throws {
    // SDK rule (§7.4 step 3) kept for typed models.
    let source = try ResponseParser.parse(
        response(402, #"{"id":"s","status":"failed","livemode":true}"#), as: Source.self
    ).get()
    #expect(source.status == .failed)
}

@Test func missingRequiredFieldIsDecodingError() throws {
    let error = try #require(
        failure(ResponseParser.parse(response(200, #"{"id":"s","livemode":true}"#), as: Source.self)))
    #expect(error.kind == .decoding)
    #expect(error.httpStatus == 200)
    #expect(error.message.contains("missing required field status"))
}

@Test func errorBodyWinsEvenWith200() throws {
    let body = #"{"error":{"type":"invalid_request_error","message":"No such source"}}"#
    #expect(failure(ResponseParser.parseJSON(response(200, body)))?.kind == .invalidRequest)
}

@Test func nonJSONAndNonObjectBodies() throws {
    #expect(failure(ResponseParser.parseJSON(response(200, "<html>")))?.kind == .decoding)
    #expect(failure(ResponseParser.parseJSON(response(200, "[1]")))?.kind == .decoding)
    #expect(failure(ResponseParser.parseJSON(response(502, "Bad gateway")))?.kind == .api)
    #expect(failure(ResponseParser.parseJSON(response(401, "")))?.kind == .authentication)
    #expect(failure(ResponseParser.parseJSON(response(404, "{}")))?.kind == .invalidRequest)
    #expect(try ResponseParser.parseJSON(response(200, #"{"id":"x"}"#)).get() == ["id": "x"])
}

@Test func strippingNullsIsRecursive() {
    let value: JSONValue = ["a": nil, "b": ["c": nil, "d": [1, nil, ["e": nil]]], "f": 0]
    #expect(value.strippingNulls() == ["b": ["d": [1, [:]]], "f": 0])
}

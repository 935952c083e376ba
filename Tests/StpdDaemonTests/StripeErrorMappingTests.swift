import Foundation
import JSONRPC
import StpdCore
import StpdDaemon
import StpdProtocol
import StripeAPI
import Testing

/// A `StripeError` thrown by a handler reaches the client as its 3xxx error with the seven data keys.
@Suite struct StripeErrorMappingTests {
    static let expected: [(StripeError.Kind, Int, String)] = [
        (.card, 3001, "StripeCardError"),
        (.invalidRequest, 3002, "StripeInvalidRequest"),
        (.api, 3003, "StripeAPIError"),
        (.decoding, 3003, "StripeAPIError"),
        (.authentication, 3004, "StripeAuthentication"),
        (.rateLimit, 3005, "StripeRateLimited"),
        (.connection, 3006, "StripeConnection"),
        (.idempotency, 3007, "StripeIdempotency"),
        (.ephemeralKeyDecoding, 3008, "EphemeralKeyInvalid"),
    ]

    @Test func everyKindHasAnExpectation() {
        #expect(Set(Self.expected.map(\.0)) == Set(StripeError.Kind.allCases))
    }

    @Test(arguments: expected)
    func kindMapsToItsCodeWithFullData(kind: StripeError.Kind, code: Int, name: String) throws {
        let error = StripeError(
            kind: kind, type: "card_error", code: "card_declined", cardErrorCode: .cardDeclined,
            declineCode: "insufficient_funds", param: "card[number]", message: "Your card has insufficient funds.",
            requestID: "req_123", httpStatus: 402)
        let rpc = error.rpcError
        #expect(rpc.code == code)
        #expect(StpdErrors.declaration(for: kind).name == name)
        let declaration = try #require(StpdErrors.all.first { $0.code == code })
        #expect(declaration.name == name, "the declaration is listed in StpdErrors.all, hence in the contract")
        #expect(rpc.message == "\(declaration.message): Your card has insufficient funds.")
        let data = try #require(rpc.data)
        #expect(data["type"] == "card_error")
        #expect(data["code"] == "card_declined")
        #expect(data["decline_code"] == "insufficient_funds")
        #expect(data["param"] == "card[number]")
        #expect(data["message"] == "Your card has insufficient funds.")
        #expect(data["request_id"] == "req_123")
        #expect(data["http_status"] == .int(402))
        #expect(data.objectValue?.count == 7)
    }

    @Test func unknownFieldsAreNullNotMissing() throws {
        let rpc = StripeError(kind: .connection, message: "Could not connect to Stripe after 3 attempt(s): refused")
            .rpcError
        #expect(rpc.code == 3006)
        let data = try #require(rpc.data?.objectValue)
        #expect(Set(data.keys) == ["type", "code", "decline_code", "param", "message", "request_id", "http_status"])
        for key in ["type", "code", "decline_code", "param", "request_id", "http_status"] {
            #expect(data[key] == .null, "\(key)")
        }
        #expect(data["message"] == "Could not connect to Stripe after 3 attempt(s): refused")
    }

    @Test func aStripeErrorParsedFromABodyMapsByKind() throws {
        let body: JSONValue = [
            "error": ["type": "invalid_request_error", "message": "No such customer: 'cus_x'", "param": "customer"]
        ]
        let error = try #require(StripeError(body: body, httpStatus: 404, requestID: "req_9"))
        let rpc = error.rpcError
        #expect(rpc.code == 3002)
        #expect(rpc.data?["param"] == "customer")
        #expect(rpc.data?["http_status"] == .int(404))
        let unauthorized = try #require(
            StripeError(body: ["error": ["type": "invalid_request_error"]], httpStatus: 401, requestID: nil))
        #expect(unauthorized.rpcError.code == 3004)
    }

    @Test func secretsInStripesMessageAreMasked() throws {
        let key = "sk_live_51HbQxLKj2s9dFh3kPzR7yT0vWq"
        let error = StripeError(kind: .authentication, message: "Invalid API Key provided: \(key) for 4242424242424242")
        let rpc = error.rpcError
        #expect(!rpc.message.contains(key))
        #expect(!rpc.message.contains("4242424242424242"))
        let dataMessage = try #require(rpc.data?["message"]?.stringValue)
        #expect(!dataMessage.contains(key))
        #expect(dataMessage.contains(StripeKey.redact(key)))
    }

    @Test func aHandlerCanThrowAStripeError() async throws {
        var router = MethodRouter<Void>()
        router.register(Ping.self) { _, _ in
            throw StripeError(kind: .rateLimit, type: "rate_limit_error", message: "Too many requests", httpStatus: 429)
        }
        let response = try #require(await router.handle(Request(id: 7, method: Ping.name, params: nil), context: ()))
        guard case .failure(let error) = response.outcome else {
            Issue.record("expected an error, got \(response.outcome)")
            return
        }
        #expect(error.code == 3005)
        #expect(error.data?["type"] == "rate_limit_error")
        #expect(error.data?["http_status"] == .int(429))
    }

    @Test func stripeBlockIsComplete() {
        let codes = StpdErrors.stripe.map(\.code)
        #expect(codes == Array(3001...3009))
        #expect(
            StpdErrors.stripe.allSatisfy { decl in
                StpdErrors.all.contains { $0.code == decl.code && $0.name == decl.name }
            })
        for declaration in StpdErrors.stripe where declaration.code != 3009 {
            #expect(
                declaration.description.contains("{type, code, decline_code, param, message, request_id, http_status}"),
                "\(declaration.name)")
        }
    }

    @Test func notConfiguredSaysWhatWouldDo() throws {
        let none = StpdErrors.notConfigured(keyKind: nil, required: [.secret, .restricted])
        #expect(none.code == 3009)
        #expect(none.data?["key_kind"] == .null)
        #expect(none.data?["setting"] == "STPD_STRIPE_KEY")
        #expect(none.message.contains("no Stripe key"))
        let wrongKind = StpdErrors.notConfigured(keyKind: .publishable, required: [.secret, .restricted])
        #expect(wrongKind.data?["key_kind"] == "publishable")
        #expect(wrongKind.data?["required"] == ["secret", "restricted"])
        #expect(wrongKind.message.contains("needs a secret or restricted key; the daemon has a publishable key"))
    }
}

/// The event log's cursor errors as `events.subscribe` and `events.wait` answer them.
@Suite struct CursorErrorMappingTests {
    @Test func anExpiredCursorNamesTheOldestKept() {
        let error = EventLogError.cursorExpired(oldestKept: 42).rpcError
        #expect(error.code == StpdErrors.cursorExpired.code)
        #expect(error.data == ["oldestSeq": 42])
    }

    @Test func aCursorAheadNamesTheLatest() {
        let error = EventLogError.cursorAhead(latestSeq: 7).rpcError
        #expect(error.code == StpdErrors.cursorAhead.code)
        #expect(error.data == ["latestSeq": 7])
    }
}

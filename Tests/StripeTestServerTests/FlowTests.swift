import Foundation
import Hummingbird
import HummingbirdTesting
import JSONRPC
import NIOCore
import StripeAPI
import StripeTestServer
import TestSupport
import Testing

@Suite struct SourceTests {
    @Test func redirectSourceAuthorizeFailCancelExpire() async throws {
        let state = StripeTestState()
        func ideal() async -> Reply {
            await call(
                state, "POST", "/v1/sources", key: pk,
                form: [
                    "type": "ideal", "amount": 1099, "currency": "eur", "owner": ["name": "Jenny Rosen"],
                    "redirect": ["return_url": "stpd-test://return"], "ideal": ["bank": "ing"],
                ])
        }
        let src = await ideal()
        #expect(src.status == 200)
        #expect(src["object"] == "source")
        #expect(src["flow"] == "redirect")
        #expect(src["status"] == "pending")
        #expect(src["usage"] == "single_use")
        #expect(src["redirect"]?["status"] == "pending")
        #expect(src["redirect"]?["return_url"] == "stpd-test://return")
        let id = try #require(src["id"]?.stringValue)
        let secret = try #require(src["client_secret"]?.stringValue)
        #expect(secret.hasPrefix("src_client_secret_"))
        #expect(src["redirect"]?["url"]?.stringValue?.hasPrefix("http://127.0.0.1:12111/_test/redirect/\(id)") == true)

        #expect(await call(state, "GET", "/v1/sources/\(id)", key: pk).status == 404)
        #expect(
            await call(state, "GET", "/v1/sources/\(id)", key: pk, form: ["client_secret": .string(secret)])["status"]
                == "pending")

        #expect(await control(state, "POST", "/_test/sources/\(id)/authorize").status == 200)
        let done = await call(state, "GET", "/v1/sources/\(id)", key: pk, form: ["client_secret": .string(secret)])
        #expect(done["status"] == "chargeable")
        #expect(done["redirect"]?["status"] == "succeeded")

        let failing = try #require(await ideal()["id"]?.stringValue)
        let failed = await control(state, "POST", "/_test/sources/\(failing)/fail")
        #expect(failed["status"] == "failed")
        #expect(failed["redirect"]?["status"] == "failed")
        let canceling = try #require(await ideal()["id"]?.stringValue)
        #expect(await control(state, "POST", "/_test/sources/\(canceling)/cancel")["status"] == "canceled")
        let expiring = try #require(await ideal()["id"]?.stringValue)
        #expect(await control(state, "POST", "/_test/sources/\(expiring)/expire")["status"] == "canceled")

        // The redirect page drives the source and sends the browser back.
        let viaPage = await ideal()
        let pageID = try #require(viaPage["id"]?.stringValue)
        let pageSecret = try #require(viaPage["client_secret"]?.stringValue)
        let page = await control(state, "GET", "/_test/redirect/\(pageID)?client_secret=\(pageSecret)&action=authorize")
        #expect(page.status == 302)
        #expect(page.header("Location")?.hasPrefix("stpd-test://return?client_secret=\(pageSecret)") == true)
        #expect(state.object(pageID)?["status"] == "chargeable")
    }

    @Test func flowsByType() async {
        let state = StripeTestState()
        let card = await call(
            state, "POST", "/v1/sources", key: pk,
            form: [
                "type": "card",
                "card": ["number": "4242424242424242", "exp_month": 12, "exp_year": 2040, "cvc": "123"],
            ])
        #expect(card["flow"] == "none")
        #expect(card["status"] == "chargeable")
        #expect(card["card"]?["brand"] == "Visa")
        let sepa = await call(
            state, "POST", "/v1/sources", key: pk,
            form: [
                "type": "sepa_debit", "currency": "eur", "owner": ["name": "J"],
                "sepa_debit": ["iban": "DE89370400440532013000"],
            ])
        #expect(sepa["flow"] == "none")
        #expect(sepa["status"] == "chargeable")
        let multibanco = await call(
            state, "POST", "/v1/sources", key: pk,
            form: [
                "type": "multibanco", "amount": 1099, "currency": "eur", "owner": ["email": "j@example.com"],
                "redirect": ["return_url": "stpd-test://return"],
            ])
        #expect(multibanco["flow"] == "receiver")
        #expect(multibanco["receiver"]?["address"] != nil)
        for type in ["sofort", "bancontact", "giropay", "eps", "p24", "alipay"] {
            var form: [String: JSONValue] = [
                "type": .string(type), "amount": 1099, "currency": "eur",
                "redirect": ["return_url": "stpd-test://return"],
            ]
            if type == "sofort" { form["sofort"] = ["country": "DE"] }
            let s = await call(state, "POST", "/v1/sources", key: pk, form: form)
            #expect(s["flow"] == "redirect", "\(type): \(s.json)")
        }
        let noReturn = await call(
            state, "POST", "/v1/sources", key: pk, form: ["type": "giropay", "amount": 1, "currency": "eur"])
        #expect(noReturn.error?["param"] == "redirect[return_url]")
    }
}

@Suite struct PaymentIntentTests {
    func intent(_ state: StripeTestState, types: [JSONValue] = ["card"]) async throws -> (String, String) {
        let pi = await call(
            state, "POST", "/v1/payment_intents",
            form: ["amount": 1099, "currency": "eur", "payment_method_types": .array(types)])
        #expect(pi["status"] == "requires_payment_method")
        return (try #require(pi["id"]?.stringValue), try #require(pi["client_secret"]?.stringValue))
    }

    @Test func plainCardSucceedsAndClientSecretIsChecked() async throws {
        let state = StripeTestState()
        #expect(
            await call(state, "POST", "/v1/payment_intents", key: pk, form: ["amount": 1099, "currency": "eur"]).status
                == 401)
        let (id, secret) = try await intent(state)
        #expect(await call(state, "GET", "/v1/payment_intents/\(id)", key: pk).status == 400)
        #expect(
            await call(state, "GET", "/v1/payment_intents/\(id)", key: pk, form: ["client_secret": .string(secret)])
                .status == 200)
        let confirmed = await call(
            state, "POST", "/v1/payment_intents/\(id)/confirm", key: pk,
            form: ["client_secret": .string(secret), "payment_method": "pm_card_visa"])
        #expect(confirmed["status"] == "succeeded")
        #expect(confirmed["amount_received"] == 1099)
    }

    @Test func threeDSecureAndBankRedirectsNeedAction() async throws {
        let state = StripeTestState()
        let (id, secret) = try await intent(state)
        let action = await call(
            state, "POST", "/v1/payment_intents/\(id)/confirm", key: pk,
            form: [
                "client_secret": .string(secret), "return_url": "stpd-test://pi",
                "payment_method_data": [
                    "type": "card", "card": ["number": "4000000000003220", "exp_month": 1, "exp_year": 2040],
                ],
            ])
        #expect(action["status"] == "requires_action")
        #expect(action["next_action"]?["type"] == "redirect_to_url")
        #expect(action["next_action"]?["redirect_to_url"]?["return_url"] == "stpd-test://pi")
        #expect(
            action["next_action"]?["redirect_to_url"]?["url"]?.stringValue?.contains("/_test/redirect/\(id)") == true)
        #expect(await control(state, "POST", "/_test/payment_intents/\(id)/succeed")["status"] == "succeeded")

        let (idealID, idealSecret) = try await intent(state, types: ["ideal"])
        let ideal = await call(
            state, "POST", "/v1/payment_intents/\(idealID)/confirm", key: pk,
            form: [
                "client_secret": .string(idealSecret), "return_url": "stpd-test://pi",
                "payment_method_data": ["type": "ideal", "ideal": ["bank": "ing"]],
            ])
        #expect(ideal["status"] == "requires_action")
        let failed = await control(state, "POST", "/_test/payment_intents/\(idealID)/fail")
        #expect(failed["status"] == "requires_payment_method")
        #expect(failed["last_payment_error"]?["code"] == "payment_intent_authentication_failure")
    }

    @Test func aSecretKeyConfirmsWithoutTheClientSecret() async throws {
        let state = StripeTestState()
        let (id, secret) = try await intent(state)
        let refused = await call(
            state, "POST", "/v1/payment_intents/\(id)/confirm",
            form: ["client_secret": .string(secret), "payment_method": "pm_card_visa"])
        #expect(refused.status == 400)
        #expect(refused.error?["message"] == "Received unknown parameter: client_secret")
        let confirmed = await call(
            state, "POST", "/v1/payment_intents/\(id)/confirm", form: ["payment_method": "pm_card_visa"])
        #expect(confirmed["status"] == "succeeded")

        let seti = await call(state, "POST", "/v1/setup_intents", form: [:])
        let setiID = try #require(seti["id"]?.stringValue)
        let setupRefused = await call(
            state, "POST", "/v1/setup_intents/\(setiID)/confirm",
            form: ["client_secret": seti["client_secret"]!, "payment_method": "pm_card_visa"])
        #expect(setupRefused.error?["param"] == "client_secret")
        #expect(
            await call(state, "POST", "/v1/setup_intents/\(setiID)/confirm", form: ["payment_method": "pm_card_visa"])
                .status == 200)
    }

    @Test func theRequestLogDecodesTheForm() async throws {
        let state = StripeTestState()
        let (id, secret) = try await intent(state)
        await call(
            state, "POST", "/v1/payment_intents/\(id)/confirm", key: pk,
            form: [
                "client_secret": .string(secret), "payment_method_data": ["type": "card", "card": ["exp_month": 4]],
            ])
        await call(state, "GET", "/v1/payment_intents/\(id)", key: pk, form: ["expand": ["payment_method"]])
        let log = await control(state, "GET", "/_test/requests")
        let entries = try #require(log["data"]?.arrayValue)
        #expect(entries[1]["auth"] == "publishable")
        #expect(
            entries[1]["form"] == [
                "client_secret": .string(secret), "payment_method_data": ["type": "card", "card": ["exp_month": "4"]],
            ])
        #expect(entries[2]["form"] == ["expand": ["payment_method"]])
    }

    @Test func declineLeavesRequiresPaymentMethod() async throws {
        let state = StripeTestState()
        let (id, secret) = try await intent(state)
        let declined = await call(
            state, "POST", "/v1/payment_intents/\(id)/confirm", key: pk,
            form: ["client_secret": .string(secret), "payment_method": "pm_card_chargeDeclined"])
        #expect(declined.status == 402)
        #expect(declined.error?["decline_code"] == "generic_decline")
        #expect(declined.error?["payment_intent"]?["status"] == "requires_payment_method")
        let after = await call(state, "GET", "/v1/payment_intents/\(id)")
        #expect(after["last_payment_error"]?["code"] == "card_declined")
    }
}

@Suite struct HTTPLayerTests {
    @Test func routerThroughHummingbirdTesting() async throws {
        let server = StripeTestServer()
        try await server.makeApplication().test(.router) { client in
            try await client.execute(
                uri: "/v1/customers", method: .post,
                headers: [
                    .authorization: "Bearer \(sk)", .contentType: "application/x-www-form-urlencoded",
                    HTTPFieldType.Name("Idempotency-Key")!: "router-1",
                ],
                body: ByteBuffer(string: "email=jenny%40example.com&shipping[name]=J&shipping[address][line1]=1%20Main")
            ) { response in
                #expect(response.status == .ok)
                let json = try JSONCoding.decode(JSONValue.self, from: Data(buffer: response.body))
                #expect(json["email"] == "jenny@example.com")
                #expect(json["shipping"]?["address"]?["line1"] == "1 Main")
            }
            try await client.execute(
                uri: "/v1/customers?foo=1", method: .post, headers: [.authorization: "Bearer \(sk)"]
            ) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/_test/requests", method: .get) { response in
                let json = try JSONCoding.decode(JSONValue.self, from: Data(buffer: response.body))
                #expect(json["count"] == 2)
            }
        }
    }

    @Test func inProcessServerOnEphemeralPortAndDroppedConnection() async throws {
        try await withStripeTestServer { server in
            #expect(server.port > 0)
            let ok = try await rawHTTP(
                port: server.port, httpRequest("POST", "/v1/customers", port: server.port, body: "email=a%40b.c"))
            #expect(ok.status == 200)
            #expect(ok.body.contains("\"object\" : \"customer\""))
            server.state.addFault(Fault(path: "/v1/customers", drop: true))
            let dropped = try await rawHTTP(port: server.port, httpRequest("POST", "/v1/customers", port: server.port))
            #expect(dropped.bytes.isEmpty)
            let again = try await rawHTTP(
                port: server.port, httpRequest("GET", "/v1/customers/cus_missing", port: server.port))
            #expect(again.status == 404)
            #expect(server.state.requests.map(\.status) == [200, nil, 404])
        }
    }

    @Test func executablePrintsItsPortAndServes() async throws {
        let executable = try builtExecutable("stripe-test-server")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", "0"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        let line: String = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var data = Data()
                while !data.contains(UInt8(ascii: "\n")) {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    data.append(chunk)
                }
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
        #expect(line.hasPrefix("listening on http://127.0.0.1:"))
        let port = try #require(
            Int(line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last ?? ""))
        let reply = try await rawHTTP(port: port, httpRequest("GET", "/v1/customers/cus_x", port: port, key: nil))
        #expect(reply.status == 401)
        #expect(reply.body.contains("invalid_request_error"))
    }
}

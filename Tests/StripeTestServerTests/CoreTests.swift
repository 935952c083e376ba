import Foundation
import JSONRPC
import StripeAPI
import StripeTestServer
import Testing

@Suite struct FormDecodingTests {
    @Test func decodesWhatTheClientEncoderWrites() {
        let params: [String: JSONValue] = [
            "shipping": ["name": "Jenny Rosen", "address": ["line1": "1 Main St & Co", "city": "Zürich"]],
            "expand": ["a", "b"], "email": "a+b@example.com",
        ]
        #expect(FormDecoding.decode(FormEncoder.encode(params)) == params.mapValues { $0 })
        #expect(FormDecoding.decode("a[]=x&a[]=y&b=1+2") == ["a": ["x", "y"], "b": "1 2"])
    }
}

@Suite struct AuthTests {
    @Test func missingAndInvalidKeysGive401() async {
        let state = StripeTestState()
        let missing = await call(state, "GET", "/v1/customers/cus_1", key: nil)
        #expect(missing.status == 401)
        #expect(missing.error?["type"] == "invalid_request_error")
        #expect(missing.error?["message"]?.stringValue?.hasPrefix("You did not provide an API key") == true)
        let invalid = await call(state, "GET", "/v1/customers/cus_1", key: "sk_test_wrongwrongwrong1234")
        #expect(invalid.status == 401)
        #expect(invalid.error?["message"] == "Invalid API Key provided: sk_test_***************1234")
    }

    @Test func publishableKeyIsLimitedToClientEndpoints() async {
        let state = StripeTestState()
        #expect(await call(state, "POST", "/v1/customers", key: pk).status == 401)
        let customer = await makeCustomer(state)
        #expect(await call(state, "GET", "/v1/customers/\(customer)", key: pk).status == 401)
        #expect(
            await call(
                state, "POST", "/v1/ephemeral_keys", key: pk, form: ["customer": .string(customer)],
                headers: ["Stripe-Version": "2020-08-27"]
            ).status == 401)
        let pm = await call(
            state, "POST", "/v1/payment_methods", key: pk,
            form: [
                "type": "card",
                "card": ["number": "4242424242424242", "exp_month": 12, "exp_year": 2040, "cvc": "123"],
            ])
        #expect(pm.status == 200)
    }

    @Test func ephemeralKeyShapeAndScope() async throws {
        let state = StripeTestState()
        let customer = await makeCustomer(state)
        let other = await makeCustomer(state)
        let noVersion = await call(state, "POST", "/v1/ephemeral_keys", form: ["customer": .string(customer)])
        #expect(noVersion.status == 400)
        let key = await call(
            state, "POST", "/v1/ephemeral_keys", form: ["customer": .string(customer)],
            headers: ["Stripe-Version": "2020-08-27"])
        #expect(key.status == 200)
        #expect(key["object"] == "ephemeral_key")
        #expect(key["id"]?.stringValue?.hasPrefix("ephkey_") == true)
        #expect(key["livemode"] == false)
        let secret = try #require(key["secret"]?.stringValue)
        #expect(secret.hasPrefix("ek_test_"))
        #expect(key["associated_objects"] == [["type": "customer", "id": .string(customer)]])
        let created = try #require(key["created"]?.intValue)
        #expect(key["expires"]?.intValue == created + 3600)

        #expect(await call(state, "GET", "/v1/customers/\(customer)", key: secret).status == 200)
        #expect(await call(state, "GET", "/v1/customers/\(other)", key: secret).status == 403)
        #expect(await call(state, "POST", "/v1/customers", key: secret).status == 401)
        #expect(
            await call(
                state, "GET", "/v1/payment_methods", key: secret,
                form: ["customer": .string(customer), "type": "card"]
            ).status == 200)
        #expect(
            await call(
                state, "GET", "/v1/payment_methods", key: secret,
                form: ["customer": .string(other), "type": "card"]
            ).status == 403)
        let attached = await call(
            state, "POST", "/v1/payment_methods/pm_card_visa/attach", key: secret,
            form: ["customer": .string(customer)])
        #expect(attached.status == 200)
        #expect(attached["customer"] == .string(customer))
        #expect(
            await call(
                state, "POST", "/v1/payment_methods/pm_card_visa/attach", key: secret,
                form: ["customer": .string(other)]
            ).status == 403)

        state.advanceClock(seconds: 3601)
        let expired = await call(state, "GET", "/v1/customers/\(customer)", key: secret)
        #expect(expired.status == 401)
    }
}

@Suite struct CustomerAndPaymentMethodTests {
    @Test func customerShapeAndShippingUpdate() async throws {
        let state = StripeTestState()
        let created = await call(
            state, "POST", "/v1/customers", form: ["email": "jenny@example.com", "metadata": ["a": "1"]])
        #expect(created.status == 200)
        for field in [
            "id", "object", "created", "livemode", "email", "shipping", "metadata", "invoice_settings",
            "default_source",
        ] {
            #expect(created[field] != nil, "missing \(field)")
        }
        #expect(created["object"] == "customer")
        #expect(created["shipping"] == .null)
        let id = try #require(created["id"]?.stringValue)
        let ek = await makeEphemeralKey(state, customer: id)
        let updated = await call(
            state, "POST", "/v1/customers/\(id)", key: ek,
            form: [
                "shipping": [
                    "name": "Jenny Rosen", "phone": "+15555550100",
                    "address": ["line1": "1 Main St", "city": "Berlin", "postal_code": "10115", "country": "DE"],
                ]
            ])
        #expect(updated.status == 200)
        #expect(updated["shipping"]?["name"] == "Jenny Rosen")
        #expect(updated["shipping"]?["address"]?["city"] == "Berlin")
        #expect(updated["shipping"]?["address"]?["line2"] == .null)
        let missingName = await call(
            state, "POST", "/v1/customers/\(id)", form: ["shipping": ["address": ["line1": "x"]]])
        #expect(missingName.status == 400)
        #expect(missingName.error?["param"] == "shipping[name]")
        #expect(await call(state, "GET", "/v1/customers/cus_nope").status == 404)
    }

    @Test func unknownParametersAreRejectedByName() async {
        let state = StripeTestState()
        let top = await call(state, "POST", "/v1/customers", form: ["email": "a@b.c", "foo": "1"])
        #expect(top.status == 400)
        #expect(top.error?["type"] == "invalid_request_error")
        #expect(top.error?["message"] == "Received unknown parameter: foo")
        #expect(top.error?["param"] == "foo")
        let nested = await call(state, "POST", "/v1/customers", form: ["shipping": ["name": "x", "bogus": "y"]])
        #expect(nested.error?["message"] == "Received unknown parameter: shipping[bogus]")
        let get = await call(
            state, "GET", "/v1/payment_methods", form: ["customer": "cus_x", "type": "card", "zzz": "1"])
        #expect(get.error?["param"] == "zzz")
    }

    @Test func cardPaymentMethodsAttachListDetach() async throws {
        let state = StripeTestState()
        let customer = await makeCustomer(state)
        let pm = await call(
            state, "POST", "/v1/payment_methods", key: pk,
            form: [
                "type": "card", "card": ["number": "4242424242424242", "exp_month": 8, "exp_year": 2040, "cvc": "123"],
                "billing_details": ["name": "Jenny"],
            ])
        #expect(pm["object"] == "payment_method")
        #expect(pm["type"] == "card")
        #expect(pm["card"]?["brand"] == "visa")
        #expect(pm["card"]?["last4"] == "4242")
        #expect(pm["card"]?["exp_month"] == 8)
        #expect(pm["card"]?["exp_year"] == 2040)
        #expect(pm["billing_details"]?["name"] == "Jenny")
        #expect(pm["customer"] == .null)
        let pmID = try #require(pm["id"]?.stringValue)
        #expect(pmID.hasPrefix("pm_"))

        let ek = await makeEphemeralKey(state, customer: customer)
        #expect(
            await call(
                state, "POST", "/v1/payment_methods/\(pmID)/attach", key: ek, form: ["customer": .string(customer)]
            ).status == 200)
        _ = await call(
            state, "POST", "/v1/payment_methods/pm_card_mastercard/attach", form: ["customer": .string(customer)])
        let list = await call(
            state, "GET", "/v1/payment_methods", key: ek, form: ["customer": .string(customer), "type": "card"])
        #expect(list["object"] == "list")
        #expect(list["url"] == "/v1/payment_methods")
        #expect(list["has_more"] == false)
        #expect(list["data"]?.arrayValue?.count == 2)
        #expect(list["data"]?.arrayValue?.first?["card"]?["brand"] == "mastercard")

        let detached = await call(state, "POST", "/v1/payment_methods/\(pmID)/detach", key: ek)
        #expect(detached.status == 200)
        #expect(detached["customer"] == .null)
        #expect(await call(state, "POST", "/v1/payment_methods/\(pmID)/detach", key: ek).status == 400)
        let after = await call(
            state, "GET", "/v1/payment_methods", key: ek, form: ["customer": .string(customer), "type": "card"])
        #expect(after["data"]?.arrayValue?.count == 1)
    }

    @Test func declinesOnAttach() async throws {
        let state = StripeTestState()
        let customer = await makeCustomer(state)
        for (number, decline) in [("4000000000000002", "generic_decline"), ("4000000000009995", "insufficient_funds")] {
            let pm = await call(
                state, "POST", "/v1/payment_methods", key: pk,
                form: ["type": "card", "card": ["number": .string(number), "exp_month": 1, "exp_year": 2041]])
            let id = try #require(pm["id"]?.stringValue)
            let attach = await call(
                state, "POST", "/v1/payment_methods/\(id)/attach", form: ["customer": .string(customer)])
            #expect(attach.status == 402)
            #expect(attach.error?["type"] == "card_error")
            #expect(attach.error?["code"] == "card_declined")
            #expect(attach.error?["decline_code"] == .string(decline))
        }
        let bad = await call(
            state, "POST", "/v1/payment_methods", key: pk,
            form: ["type": "card", "card": ["number": "4242424242424241", "exp_month": 1, "exp_year": 2041]])
        #expect(bad.status == 402)
        #expect(bad.error?["code"] == "incorrect_number")
        let missing = await call(
            state, "POST", "/v1/payment_methods", key: pk,
            form: ["type": "card", "card": ["number": "4242424242424242"]])
        #expect(missing.error?["param"] == "card[exp_month]")
    }
}

@Suite struct IdempotencyAndLogTests {
    @Test func replayReturnsTheStoredResponseAndTheLogCountsIt() async throws {
        let state = StripeTestState()
        let headers = ["Idempotency-Key": "key-1"]
        let first = await call(state, "POST", "/v1/customers", form: ["email": "a@b.c"], headers: headers)
        let second = await call(state, "POST", "/v1/customers", form: ["email": "a@b.c"], headers: headers)
        #expect(first["id"] == second["id"])
        #expect(second.header("Idempotent-Replayed") == "true")
        let conflict = await call(state, "POST", "/v1/customers", form: ["email": "other@b.c"], headers: headers)
        #expect(conflict.status == 400)
        #expect(conflict.error?["type"] == "idempotency_error")
        #expect(state.requestCount(idempotencyKey: "key-1") == 3)
        #expect(state.requests.map(\.replayed) == [false, true, false])

        let log = await control(state, "GET", "/_test/requests")
        #expect(log["data"]?.arrayValue?.count == 3)
        #expect(log["data"]?.arrayValue?.first?["idempotency_key"] == "key-1")
        #expect(log["data"]?.arrayValue?.first?["auth"] == "secret")
        #expect(log["data"]?.arrayValue?.first?["status"] == 200)
        #expect(await control(state, "DELETE", "/_test/requests").status == 200)
        #expect(state.requests.isEmpty)
    }
}

@Suite struct FaultTests {
    @Test func statusFaultsFireInOrderThenExpire() async {
        let state = StripeTestState()
        let added = await control(
            state, "POST", "/_test/faults",
            json: [
                ["method": "POST", "path": "/v1/customers", "status": 500, "times": 2],
                [
                    "path": "^/v1/customers$", "status": 429,
                    "headers": ["Retry-After": "1", "Stripe-Should-Retry": "true"],
                ],
            ])
        #expect(added.status == 200)
        let a = await call(state, "POST", "/v1/customers", headers: ["Idempotency-Key": "k"])
        let b = await call(state, "POST", "/v1/customers", headers: ["Idempotency-Key": "k"])
        let c = await call(state, "POST", "/v1/customers", headers: ["Idempotency-Key": "k"])
        let d = await call(state, "POST", "/v1/customers", headers: ["Idempotency-Key": "k"])
        #expect([a.status, b.status, c.status, d.status] == [Int]([500, 500, 429, 200]))
        #expect(a.error?["type"] == "api_error")
        #expect(c.header("Retry-After") == "1")
        #expect(c.header("Stripe-Should-Retry") == "true")
        #expect(c.error?["code"] == "rate_limit")
        #expect(state.pendingFaults.isEmpty)
        #expect(state.requestCount(idempotencyKey: "k") == 4)
        #expect(state.requests.map(\.fault) == ["status", "status", "status", nil])
    }

    @Test func customBodyMethodFilterAndDelay() async {
        let state = StripeTestState()
        state.addFault(
            Fault(
                method: "GET", path: "/v1/customers", status: 402,
                body: ["error": ["type": "card_error", "message": "x"]]))
        state.addFault(Fault(path: "/v1/payment_methods", delayMs: 300))
        #expect(await call(state, "POST", "/v1/customers").status == 200)  // method does not match
        let faulted = await call(state, "GET", "/v1/customers/cus_x")
        #expect(faulted.status == 402)
        #expect(faulted.error?["type"] == "card_error")
        let start = ContinuousClock.now
        let slow = await call(
            state, "POST", "/v1/payment_methods", key: pk, form: ["type": "card", "card": ["token": "tok_visa"]])
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(slow.status == 200)
    }

    @Test func afterHandlingDropKeepsTheIdempotentResult() async {
        let state = StripeTestState()
        state.addFault(Fault(path: "/v1/customers", drop: true, afterHandling: true))
        let lost = await call(state, "POST", "/v1/customers", headers: ["Idempotency-Key": "lost"])
        #expect(lost.raw.drop)
        let retry = await call(state, "POST", "/v1/customers", headers: ["Idempotency-Key": "lost"])
        #expect(retry.status == 200)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(state.requests.map(\.status) == [nil, 200])
    }
}

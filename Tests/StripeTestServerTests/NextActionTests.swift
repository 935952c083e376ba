import Foundation
import JSONRPC
import StripeAPI
import StripeTestServer
import Testing

// Every next action the test server starts, in the shape the `stripe` package 16.1.0 gives it, and
// the customer's side of each as Stripe's test mode plays it.

private let returnURL: JSONValue = "stpd-test://done"
private let jo: JSONValue = ["name": "Jo Doe", "email": "jo@example.test"]
private let joInBrazil: JSONValue = [
    "name": "Jo Doe", "email": "jo@example.test",
    "address": ["line1": "1 Main St", "city": "Sao Paulo", "state": "SP", "postal_code": "01000-000", "country": "BR"],
]
private let onlineMandate: JSONValue = [
    "customer_acceptance": ["type": "online", "online": ["infer_from_client": true]]
]

/// A PaymentIntent (or SetupIntent, `setup`) for `type`, confirmed with a publishable key.
private func confirm(
    _ state: StripeTestState, _ type: String, data: JSONValue = [:], billing: JSONValue? = nil,
    extra: [String: JSONValue] = [:], setup: Bool = false
) async throws -> (id: String, secret: String, reply: Reply) {
    let collection = setup ? "setup_intents" : "payment_intents"
    let created = await call(
        state, "POST", "/v1/\(collection)",
        form: setup
            ? ["payment_method_types": [.string(type)]]
            : ["amount": 1099, "currency": "usd", "payment_method_types": [.string(type)]])
    let id = try #require(created["id"]?.stringValue)
    let secret = try #require(created["client_secret"]?.stringValue)
    var pm: [String: JSONValue] = ["type": .string(type)]
    if data != [:] { pm[type] = data }
    pm["billing_details"] = billing
    var form: [String: JSONValue] = ["client_secret": .string(secret), "payment_method_data": .object(pm)]
    form.merge(extra) { _, given in given }
    let reply = await call(state, "POST", "/v1/\(collection)/\(id)/confirm", key: pk, form: form)
    return (id, secret, reply)
}

private func keys(_ value: JSONValue?) -> [String] { value?.objectValue?.keys.sorted() ?? [] }

@Suite struct NextActionShapeTests {
    /// A type, what it is confirmed with, the action it starts and the keys of its hash.
    static let cases: [(String, JSONValue, JSONValue?, [String: JSONValue], String, [String])] = [
        ("ideal", ["bank": "ing"], nil, ["return_url": returnURL], "redirect_to_url", ["return_url", "url"]),
        ("paypal", [:], nil, ["return_url": returnURL], "redirect_to_url", ["return_url", "url"]),
        (
            "klarna", [:], ["email": "jo@example.test", "address": ["country": "DE"]], ["return_url": returnURL],
            "redirect_to_url", ["return_url", "url"]
        ),
        ("affirm", [:], nil, ["return_url": returnURL], "redirect_to_url", ["return_url", "url"]),
        ("pay_by_bank", [:], nil, ["return_url": returnURL], "redirect_to_url", ["return_url", "url"]),
        ("fpx", ["bank": "maybank2u"], nil, ["return_url": returnURL], "redirect_to_url", ["return_url", "url"]),
        (
            "alipay", [:], nil, ["return_url": returnURL], "alipay_handle_redirect",
            ["native_data", "native_url", "return_url", "url"]
        ),
        (
            "cashapp", [:], nil, ["return_url": returnURL], "cashapp_handle_redirect_or_display_qr_code",
            ["hosted_instructions_url", "mobile_auth_url", "qr_code"]
        ),
        (
            "swish", [:], nil, ["return_url": returnURL], "swish_handle_redirect_or_display_qr_code",
            ["hosted_instructions_url", "mobile_auth_url", "qr_code"]
        ),
        (
            "wechat_pay", [:], nil, ["payment_method_options": ["wechat_pay": ["client": "web"]]],
            "wechat_pay_display_qr_code",
            ["data", "hosted_instructions_url", "image_data_url", "image_url_png", "image_url_svg"]
        ),
        (
            "wechat_pay", [:], nil, ["payment_method_options": ["wechat_pay": ["client": "ios"]]],
            "wechat_pay_redirect_to_ios_app", ["native_url"]
        ),
        (
            "wechat_pay", [:], nil, ["payment_method_options": ["wechat_pay": ["client": "android"]]],
            "wechat_pay_redirect_to_android_app",
            ["app_id", "nonce_str", "package", "partner_id", "prepay_id", "sign", "timestamp"]
        ),
        (
            "paynow", [:], nil, [:], "paynow_display_qr_code",
            ["data", "hosted_instructions_url", "image_url_png", "image_url_svg"]
        ),
        (
            "promptpay", [:], ["email": "jo@example.test"], [:], "promptpay_display_qr_code",
            ["data", "hosted_instructions_url", "image_url_png", "image_url_svg"]
        ),
        (
            "pix", [:], nil, [:], "pix_display_qr_code",
            ["data", "expires_at", "hosted_instructions_url", "image_url_png", "image_url_svg"]
        ),
        ("upi", [:], nil, [:], "upi_handle_redirect_or_display_qr_code", ["hosted_instructions_url", "qr_code"]),
        (
            "customer_balance", [:], nil, [:], "display_bank_transfer_instructions",
            ["amount_remaining", "currency", "financial_addresses", "hosted_instructions_url", "reference", "type"]
        ),
        (
            "blik", [:], nil, ["payment_method_options": ["blik": ["code": "123456"]]], "blik_authorize", []
        ),
        ("oxxo", [:], jo, [:], "oxxo_display_details", ["expires_after", "hosted_voucher_url", "number"]),
        (
            "boleto", ["tax_id": "000.000.000-00"], joInBrazil, [:], "boleto_display_details",
            ["expires_at", "hosted_voucher_url", "number", "pdf"]
        ),
        ("konbini", [:], jo, [:], "konbini_display_details", ["expires_at", "hosted_voucher_url", "stores"]),
        (
            "multibanco", [:], ["email": "jo@example.test"], [:], "multibanco_display_details",
            ["entity", "expires_at", "hosted_voucher_url", "reference"]
        ),
        (
            "us_bank_account",
            ["routing_number": "110000000", "account_number": "000123456789", "account_holder_type": "individual"],
            ["name": "Jo Doe"], ["mandate_data": onlineMandate], "verify_with_microdeposits",
            ["arrival_date", "hosted_verification_url", "microdeposit_type"]
        ),
    ]

    @Test func everyTypeStartsItsAction() async throws {
        let state = StripeTestState()
        for (type, data, billing, extra, action, hashKeys) in Self.cases {
            let (id, _, reply) = try await confirm(state, type, data: data, billing: billing, extra: extra)
            #expect(reply.status == 200, "\(type): \(reply.json)")
            #expect(reply["status"] == "requires_action", "\(type)")
            #expect(reply["next_action"]?["type"] == .string(action), "\(type)")
            #expect(keys(reply["next_action"]?[action]) == hashKeys, "\(type)")
            // The hash decodes as the SDK's kind of action would.
            let decoded = try NextAction(json: try #require(reply["next_action"]))
            #expect(decoded.type.rawValue == action, "\(type)")
            if decoded.kind == .redirect, action != "wechat_pay_redirect_to_ios_app" {
                #expect(decoded.redirect?.url.absoluteString.contains("/_test/redirect/\(id)") == true, "\(type)")
            } else if let hosted = decoded.hostedURL {
                #expect(hosted.absoluteString.contains("/_test/redirect/\(id)"), "\(type)")
            }
        }
    }

    @Test func setupIntentsStartTheirActionsToo() async throws {
        let state = StripeTestState()
        let bank = try await confirm(
            state, "us_bank_account",
            data: ["routing_number": "110000000", "account_number": "000123456789", "account_holder_type": "company"],
            billing: ["name": "Jo Ltd"], extra: ["mandate_data": onlineMandate], setup: true)
        #expect(bank.reply["next_action"]?["type"] == "verify_with_microdeposits")
        let paypal = try await confirm(state, "paypal", extra: ["return_url": returnURL], setup: true)
        #expect(paypal.reply["next_action"]?["redirect_to_url"]?["return_url"] == returnURL)
    }

    @Test func whatStripeRequiresIsRefused() async throws {
        let state = StripeTestState()
        let wechat = try await confirm(state, "wechat_pay").reply
        #expect(wechat.error?["param"] == "payment_method_options[wechat_pay][client]")
        let badClient = try await confirm(
            state, "wechat_pay", extra: ["payment_method_options": ["wechat_pay": ["client": "tv"]]]
        ).reply
        #expect(badClient.status == 400)
        #expect(try await confirm(state, "paypal").reply.error?["param"] == "return_url")
        #expect(try await confirm(state, "blik").reply.error?["param"] == "payment_method_options[blik][code]")
        let shortCode = try await confirm(
            state, "blik", extra: ["payment_method_options": ["blik": ["code": "12345"]]]
        ).reply
        #expect(shortCode.error?["param"] == "payment_method_options[blik][code]")
        let noTaxID = try await confirm(state, "boleto", billing: joInBrazil).reply
        #expect(noTaxID.error?["param"] == "payment_method_data[boleto][tax_id]")
        let noEmail = try await confirm(state, "oxxo", billing: ["name": "Jo Doe"]).reply
        #expect(noEmail.error?["param"] == "payment_method_data[billing_details][email]")
        let noMandate = try await confirm(
            state, "us_bank_account",
            data: ["routing_number": "110000000", "account_number": "000123456789"], billing: ["name": "Jo"]
        ).reply
        #expect(noMandate.error?["param"] == "mandate_data")
        let badRouting = try await confirm(
            state, "us_bank_account", data: ["routing_number": "110000001", "account_number": "000123456789"],
            billing: ["name": "Jo"], extra: ["mandate_data": onlineMandate]
        ).reply
        #expect(badRouting.error?["param"] == "payment_method_data[us_bank_account][routing_number]")
        // It still refuses what Stripe does not define.
        let unknown = try await confirm(
            state, "us_bank_account", data: ["routing_number": "110000000", "account_number": "1", "nickname": "x"],
            billing: ["name": "Jo"], extra: ["mandate_data": onlineMandate]
        ).reply
        #expect(unknown.error?["code"] == "parameter_unknown")
        #expect(unknown.error?["param"] == "payment_method_data[us_bank_account][nickname]")
    }
}

@Suite struct CustomerSideTests {
    func status(_ state: StripeTestState, _ id: String) async -> JSONValue? {
        await call(state, "GET", "/v1/payment_intents/\(id)")["status"]
    }

    /// Stripe's test emails for vouchers: paid or expired, at once or after 3 minutes.
    @Test(arguments: [
        ("jo@example.test", 180, "succeeded"), ("jo+succeed_immediately@example.test", 0, "succeeded"),
        ("expire_immediately@example.test", 0, "requires_payment_method"),
        ("expire_with_delay@example.test", 180, "requires_payment_method"),
        ("fill_never@example.test", 3 * 86400, "requires_payment_method"),
    ])
    func voucherEmails(email: String, after seconds: Int, ends: String) async throws {
        let state = StripeTestState()
        let (id, _, reply) = try await confirm(state, "oxxo", billing: ["name": "Jo Doe", "email": .string(email)])
        #expect(reply["status"] == "requires_action")
        if seconds > 0 {
            state.advanceClock(seconds: seconds - 1)
            #expect(await status(state, id) == "requires_action")
            state.advanceClock(seconds: 1)
        }
        let after = await call(state, "GET", "/v1/payment_intents/\(id)")
        #expect(after["status"] == .string(ends), "\(email)")
        if ends == "requires_payment_method" {
            #expect(after["last_payment_error"]?["code"] == "payment_intent_payment_attempt_expired")
            #expect(after["next_action"] == .null && after["payment_method"] == .null)
        }
    }

    @Test func blikIsApprovedOrTimesOut() async throws {
        let state = StripeTestState()
        let approved = try await confirm(
            state, "blik", extra: ["payment_method_options": ["blik": ["code": "123456"]]])
        let ignored = try await confirm(state, "blik", extra: ["payment_method_options": ["blik": ["code": "777777"]]])
        state.advanceClock(seconds: 10)
        #expect(await status(state, approved.id) == "succeeded")
        #expect(await status(state, ignored.id) == "requires_action")
        state.advanceClock(seconds: 50)
        let expired = await call(state, "GET", "/v1/payment_intents/\(ignored.id)")
        #expect(expired["last_payment_error"]?["code"] == "payment_intent_payment_attempt_expired")
    }

    @Test func controlEndpointsEndTheCustomersSide() async throws {
        let state = StripeTestState()
        let paynow = try await confirm(state, "paynow")
        let failed = await control(state, "POST", "/_test/payment_intents/\(paynow.id)/fail")
        #expect(failed["last_payment_error"]?["code"] == "payment_intent_payment_attempt_failed")
        let pix = try await confirm(state, "pix")
        #expect(await control(state, "POST", "/_test/payment_intents/\(pix.id)/succeed")["status"] == "succeeded")
        let konbini = try await confirm(state, "konbini", billing: jo)
        let expired = await control(state, "POST", "/_test/payment_intents/\(konbini.id)/expire")
        #expect(expired["last_payment_error"]?["code"] == "payment_intent_payment_attempt_expired")
        // What was due no longer happens once the customer's side has ended.
        state.advanceClock(seconds: 200)
        #expect(await status(state, konbini.id) == "requires_payment_method")

        let setup = try await confirm(state, "paypal", extra: ["return_url": returnURL], setup: true)
        let setupExpired = await control(state, "POST", "/_test/setup_intents/\(setup.id)/expire")
        #expect(setupExpired["last_setup_error"]?["code"] == "setup_intent_setup_attempt_expired")
        #expect(await control(state, "POST", "/_test/setup_intents/\(paynow.id)/succeed").status == 404)
        #expect(await control(state, "POST", "/_test/payment_intents/\(pix.id)/teleport").status == 400)
    }

    /// Any action at all, for the types no payment method here starts.
    @Test(
        arguments: [
            [
                "type": "card_await_notification",
                "card_await_notification": ["charge_attempt_at": 1, "customer_approval_required": true],
            ],
            ["type": "use_stripe_sdk", "use_stripe_sdk": ["type": "stripe_3ds2_fingerprint"]],
            [
                "type": "klarna_display_qr_code",
                "klarna_display_qr_code": ["data": "k", "image_url_png": "x", "image_url_svg": "y"],
            ],
            ["type": "teleport", "teleport": [:]],
        ] as [JSONValue])
    func anyNextAction(action: JSONValue) async throws {
        let state = StripeTestState()
        let (id, secret, _) = try await confirm(state, "paynow")
        #expect(await control(state, "POST", "/_test/payment_intents/\(id)/next_action", json: action).status == 200)
        let read = await call(
            state, "GET", "/v1/payment_intents/\(id)", key: pk, form: ["client_secret": .string(secret)])
        #expect(read["status"] == "requires_action" && read["next_action"] == action)
        #expect(await control(state, "POST", "/_test/payment_intents/\(id)/next_action", json: ["x": 1]).status == 400)
    }

    @Test func testPagesReturnToTheConfirmationsReturnURL() async throws {
        let state = StripeTestState()
        let (id, secret, reply) = try await confirm(state, "cashapp", extra: ["return_url": returnURL])
        let page = try #require(
            reply["next_action"]?["cashapp_handle_redirect_or_display_qr_code"]?["mobile_auth_url"]?.stringValue)
        #expect(page.hasSuffix("/_test/redirect/\(id)?client_secret=\(secret)"))
        let back = await control(state, "GET", "/_test/redirect/\(id)?client_secret=\(secret)&action=succeed")
        #expect(back.status == 302)
        #expect(back.header("Location")?.hasPrefix("stpd-test://done?payment_intent=\(id)&") == true)
        #expect(back.header("Location")?.hasSuffix("&redirect_status=succeeded") == true)
    }
}

@Suite struct MicrodepositTests {
    func bankIntent(
        _ state: StripeTestState, account number: String = "000123456789", setup: Bool = false
    ) async throws -> (id: String, secret: String, path: String) {
        let (id, secret, reply) = try await confirm(
            state, "us_bank_account",
            data: [
                "routing_number": "110000000", "account_number": .string(number), "account_holder_type": "individual",
            ],
            billing: ["name": "Jo Doe"], extra: ["mandate_data": onlineMandate], setup: setup)
        #expect(reply["next_action"]?["verify_with_microdeposits"]?["microdeposit_type"] == "descriptor_code")
        return (id, secret, "/v1/\(setup ? "setup_intents" : "payment_intents")/\(id)/verify_microdeposits")
    }

    func verify(
        _ state: StripeTestState, _ intent: (id: String, secret: String, path: String), _ proof: [String: JSONValue]
    ) async -> Reply {
        await call(
            state, "POST", intent.path, key: pk,
            form: ["client_secret": .string(intent.secret)].merging(proof) { a, _ in a })
    }

    @Test func stripesTestValuesVerify() async throws {
        let state = StripeTestState()
        let byAmounts = try await bankIntent(state)
        let processing = await verify(state, byAmounts, ["amounts": [45, 32]])
        #expect(processing["status"] == "processing" && processing["next_action"] == .null)
        #expect(await call(state, "GET", "/v1/payment_intents/\(byAmounts.id)")["status"] == "succeeded")

        let byCode = try await bankIntent(state)
        #expect(await verify(state, byCode, ["descriptor_code": "SM11AA"])["status"] == "processing")

        let setup = try await bankIntent(state, setup: true)
        #expect(await verify(state, setup, ["descriptor_code": "SM11AA"])["status"] == "succeeded")
    }

    @Test func theAccountDecidesTheDebit() async throws {
        let state = StripeTestState()
        let broke = try await bankIntent(state, account: "000222222227")
        #expect(await verify(state, broke, ["amounts": [32, 45]])["status"] == "processing")
        let failed = await call(state, "GET", "/v1/payment_intents/\(broke.id)")
        #expect(failed["status"] == "requires_payment_method")
        #expect(failed["last_payment_error"]?["code"] == "insufficient_funds")
        let stuck = try await bankIntent(state, account: "000000000009")
        _ = await verify(state, stuck, ["descriptor_code": "SM11AA"])
        state.advanceClock(seconds: 86400)
        #expect(await call(state, "GET", "/v1/payment_intents/\(stuck.id)")["status"] == "processing")
        let (_, _, noDeposits) = try await confirm(
            state, "us_bank_account",
            data: ["routing_number": "110000000", "account_number": "000666666661"], billing: ["name": "Jo"],
            extra: ["mandate_data": onlineMandate])
        #expect(noDeposits["last_payment_error"]?["code"] == "payment_method_microdeposit_failed")
    }

    @Test func wrongAmountsCountDownToTheLimit() async throws {
        let state = StripeTestState()
        let intent = try await bankIntent(state)
        for remaining in [2, 1] {
            let wrong = await verify(state, intent, ["amounts": [1, 2]])
            #expect(wrong.status == 400)
            #expect(wrong.error?["code"] == "payment_method_microdeposit_verification_amounts_mismatch")
            #expect(
                wrong.error?["message"]?.stringValue?.hasSuffix(
                    "You have \(remaining) verification attempts remaining.")
                    == true)
        }
        let exceeded = await verify(state, intent, ["amounts": [1, 2]])
        #expect(exceeded.error?["code"] == "payment_method_microdeposit_verification_attempts_exceeded")
        #expect(exceeded.error?["payment_intent"]?["status"] == "requires_payment_method")
        #expect(await verify(state, intent, ["amounts": [32, 45]]).error?["code"] == "payment_intent_unexpected_state")

        let codes = try await bankIntent(state)
        for _ in 1...9 {
            #expect(
                await verify(state, codes, ["descriptor_code": "SM99ZZ"]).error?["code"]
                    == "payment_method_microdeposit_verification_descriptor_code_mismatch")
        }
        #expect(
            await verify(state, codes, ["descriptor_code": "SM99ZZ"]).error?["code"]
                == "payment_method_microdeposit_verification_attempts_exceeded")
    }

    @Test(
        arguments: [
            (["amounts": [10, 11]], "payment_method_microdeposit_verification_attempts_exceeded"),
            (["descriptor_code": "SM33CC"], "payment_method_microdeposit_verification_attempts_exceeded"),
            (["amounts": [40, 41]], "payment_method_microdeposit_verification_timeout"),
            (["descriptor_code": "SM44DD"], "payment_method_microdeposit_verification_timeout"),
            (["amounts": [32]], "payment_method_microdeposit_verification_amounts_invalid"),
            (["amounts": [32, 45], "descriptor_code": "SM11AA"], nil),
            ([:], "parameter_missing"),
        ] as [([String: JSONValue], String?)])
    func stripesFailingTestValues(proof: [String: JSONValue], code: String?) async throws {
        let state = StripeTestState()
        let intent = try await bankIntent(state)
        let reply = await verify(state, intent, proof)
        #expect(reply.status == 400)
        #expect(reply.error?["code"] == code.map(JSONValue.string))
    }

    @Test func unverifiedForTenDaysTimesOut() async throws {
        let state = StripeTestState()
        let intent = try await bankIntent(state)
        state.advanceClock(seconds: 10 * 86400)
        let read = await call(state, "GET", "/v1/payment_intents/\(intent.id)")
        #expect(read["last_payment_error"]?["code"] == "payment_method_microdeposit_verification_timeout")
    }

    @Test func onlyItsOwnIntentWithItsSecret() async throws {
        let state = StripeTestState()
        let intent = try await bankIntent(state)
        let wrongSecret = await call(
            state, "POST", intent.path, key: pk, form: ["client_secret": "pi_x_secret_y", "descriptor_code": "SM11AA"])
        #expect(wrongSecret.status == 400 && wrongSecret.error?["param"] == "client_secret")
        let card = try await confirm(state, "paynow")
        let notBank = await call(
            state, "POST", "/v1/payment_intents/\(card.id)/verify_microdeposits", key: pk,
            form: ["client_secret": .string(card.secret), "descriptor_code": "SM11AA"])
        #expect(notBank.error?["code"] == "payment_intent_unexpected_state")
        let unknown = await verify(state, intent, ["descriptor_code": "SM11AA", "amount": 1])
        #expect(unknown.error?["code"] == "parameter_unknown")
        let fromSecretKey = await call(
            state, "POST", intent.path, form: ["client_secret": .string(intent.secret), "descriptor_code": "SM11AA"])
        #expect(fromSecretKey.error?["param"] == "client_secret")
        #expect(await call(state, "POST", intent.path, form: ["descriptor_code": "SM11AA"])["status"] == "processing")
    }
}

import Foundation
import JSONRPC
import StripeAPI
import Testing

private func action(_ type: String, _ details: JSONValue?) throws -> NextAction {
    var json: [String: JSONValue] = ["type": .string(type)]
    json[type] = details
    return try NextAction(json: .object(json))
}

private let qr: JSONValue = [
    "expires_at": 1_767_225_600, "image_url_png": "https://qr.stripe.com/x.png",
    "image_url_svg": "https://qr.stripe.com/x.svg",
]

@Suite struct NextActionTests {
    /// Every `next_action.type` of the `stripe` package 16.1.0 (PaymentIntent's, which include the
    /// SetupIntent's), with a hash of its shape, and its kind.
    static let types: [(String, JSONValue, NextAction.Kind)] = [
        ("redirect_to_url", ["url": "https://hooks.stripe.com/r", "return_url": "app://done"], .redirect),
        (
            "alipay_handle_redirect",
            ["native_data": nil, "native_url": nil, "return_url": "app://done", "url": "https://hooks.stripe.com/a"],
            .redirect
        ),
        (
            "cashapp_handle_redirect_or_display_qr_code",
            [
                "hosted_instructions_url": "https://pay.stripe.com/i", "mobile_auth_url": "https://cash.app/m",
                "qr_code": qr,
            ],
            .redirect
        ),
        (
            "swish_handle_redirect_or_display_qr_code",
            [
                "hosted_instructions_url": "https://pay.stripe.com/i", "mobile_auth_url": "https://app.swish.nu/m",
                "qr_code": qr,
            ],
            .redirect
        ),
        ("wechat_pay_redirect_to_ios_app", ["native_url": "weixin://app/wx/pay/"], .redirect),
        (
            "oxxo_display_details",
            [
                "expires_after": 1_767_225_600, "hosted_voucher_url": "https://payments.stripe.com/oxxo",
                "number": "123",
            ],
            .display
        ),
        (
            "boleto_display_details",
            [
                "expires_at": 1_767_225_600, "hosted_voucher_url": "https://payments.stripe.com/boleto",
                "number": "0101",
                "pdf": "https://payments.stripe.com/boleto.pdf",
            ], .display
        ),
        (
            "konbini_display_details",
            [
                "expires_at": 1_767_225_600, "hosted_voucher_url": "https://payments.stripe.com/konbini",
                "stores": ["lawson": ["confirmation_number": "1", "payment_code": "2"]],
            ], .display
        ),
        (
            "multibanco_display_details",
            [
                "entity": "12345", "expires_at": 1_767_225_600, "hosted_voucher_url": "https://payments.stripe.com/mb",
                "reference": "123456789",
            ], .display
        ),
        (
            "verify_with_microdeposits",
            [
                "arrival_date": 1_767_225_600, "hosted_verification_url": "https://payments.stripe.com/microdeposit",
                "microdeposit_type": "descriptor_code",
            ], .display
        ),
        (
            "display_bank_transfer_instructions",
            [
                "amount_remaining": 1099, "currency": "usd", "financial_addresses": [],
                "hosted_instructions_url": "https://payments.stripe.com/bt", "reference": nil,
                "type": "us_bank_transfer",
            ], .display
        ),
        (
            "paynow_display_qr_code",
            [
                "data": "000201", "hosted_instructions_url": "https://pay.stripe.com/pn", "image_url_png": "x",
                "image_url_svg": "y",
            ],
            .awaitCustomer
        ),
        (
            "promptpay_display_qr_code",
            [
                "data": "000201", "hosted_instructions_url": "https://pay.stripe.com/pp", "image_url_png": "x",
                "image_url_svg": "y",
            ],
            .awaitCustomer
        ),
        (
            "pix_display_qr_code",
            [
                "data": "000201", "expires_at": 1_767_225_600, "hosted_instructions_url": "https://pay.stripe.com/pix",
                "image_url_png": "x", "image_url_svg": "y",
            ], .awaitCustomer
        ),
        (
            "wechat_pay_display_qr_code",
            [
                "data": "weixin://wxpay", "hosted_instructions_url": "https://pay.stripe.com/wx",
                "image_data_url": "data:",
                "image_url_png": "x", "image_url_svg": "y",
            ], .awaitCustomer
        ),
        (
            "klarna_display_qr_code", ["data": "k", "expires_at": nil, "image_url_png": "x", "image_url_svg": "y"],
            .awaitCustomer
        ),
        (
            "upi_handle_redirect_or_display_qr_code",
            ["hosted_instructions_url": "https://pay.stripe.com/upi", "qr_code": qr], .awaitCustomer
        ),
        ("blik_authorize", [:], .awaitCustomer),
        (
            "card_await_notification", ["charge_attempt_at": 1_767_225_600, "customer_approval_required": true],
            .awaitCustomer
        ),
        ("use_stripe_sdk", ["type": "stripe_3ds2_fingerprint", "three_d_secure_2_source": "src_1"], .stripeSDK),
        (
            "wechat_pay_redirect_to_android_app",
            [
                "app_id": "wx", "nonce_str": "n", "package": "Sign=WXPay", "partner_id": "p", "prepay_id": "wx1",
                "sign": "s", "timestamp": "1",
            ], .unsupported
        ),
    ]

    @Test func everyTypeDecodesWithItsHashAndKind() throws {
        for (type, details, kind) in Self.types {
            let decoded = try action(type, details)
            #expect(decoded.type != .unknown && decoded.type.rawValue == type, "\(type)")
            #expect(decoded.rawType == type)
            #expect(decoded.details == details.strippingNulls(), "\(type)")
            #expect(decoded.kind == kind, "\(type)")
        }
        // Every case is one of these types, plus the SDK's upi_await_notification and unknown.
        let listed = Set(Self.types.map(\.0) + ["upi_await_notification", "unknown"])
        #expect(Set(NextAction.ActionType.allCases.map(\.rawValue)) == listed)
        #expect(NextAction.ActionType.upiAwaitNotification.kind == .awaitCustomer)
    }

    @Test func unknownTypesAreUnsupportedWithTheirHash() throws {
        let unknown = try action("teleport_display_details", ["where": "moon"])
        #expect(unknown.type == .unknown && unknown.kind == .unsupported)
        #expect(unknown.rawType == "teleport_display_details" && unknown.details == ["where": "moon"])
        // A type Stripe sent without its hash.
        let bare = try NextAction(json: ["type": "blik_authorize"])
        #expect(bare.type == .blikAuthorize && bare.details == nil)
    }

    @Test func redirectsOpenTheirURL() throws {
        let urls = Dictionary(
            uniqueKeysWithValues: try Self.types.compactMap { type, details, _ in
                try action(type, details).redirect.map { (type, "\($0.url) \($0.returnURL?.absoluteString ?? "-")") }
            })
        #expect(
            urls == [
                "redirect_to_url": "https://hooks.stripe.com/r app://done",
                "alipay_handle_redirect": "https://hooks.stripe.com/a app://done",
                "cashapp_handle_redirect_or_display_qr_code": "https://cash.app/m -",
                "swish_handle_redirect_or_display_qr_code": "https://app.swish.nu/m -",
                "wechat_pay_redirect_to_ios_app": "weixin://app/wx/pay/ -",
            ])
        let threeDS = try action(
            "use_stripe_sdk", ["type": "three_d_secure_redirect", "stripe_js": "https://hooks.stripe.com/3ds"])
        #expect(
            threeDS.redirect?.url.absoluteString == "https://hooks.stripe.com/3ds" && threeDS.redirect?.returnURL == nil
        )
        // A server-confirmed intent's 3-D Secure page is a redirect kind; the native forms stay stripeSDK.
        #expect(
            threeDS.kind == .redirect && threeDS.isThreeDSecureRedirect && threeDS.sdkType == "three_d_secure_redirect")
        let challenge = try action("use_stripe_sdk", ["type": "intent_confirmation_challenge"])
        #expect(challenge.kind == .stripeSDK && challenge.sdkType == "intent_confirmation_challenge")
        #expect(try action("redirect_to_url", ["url": "", "return_url": "app://done"]).redirect == nil)
        #expect(try action("redirect_to_url", ["return_url": "app://done"]).redirect == nil)
        #expect(try action("redirect_to_url", ["url": "https://x.test/a"]).redirect?.returnURL == nil)
    }

    /// Alipay's native URL carries Stripe's return URL, percent-encoded twice (as the SDK's
    /// STPIntentActionAlipayHandleRedirectTest has it); only a stripe.com https URL is taken.
    @Test func alipaysReturnURLInsideItsNativeURL() throws {
        func native(_ returnURL: String) -> String {
            let inner =
                "_input_charset=utf-8&return_url="
                + returnURL.addingPercentEncoding(withAllowedCharacters: .alphanumerics)! + "&sign=x"
            return "alipay://alipayclient/?" + "{\"dataString\":\"\(inner)\"}".addingPercentEncoding(
                withAllowedCharacters: .alphanumerics)!
        }
        let hook = "https://hooks.stripe.com/adapter/alipay/redirect/complete/src_1/src_client_secret_1"
        let alipay = try action(
            "alipay_handle_redirect", ["native_url": .string(native(hook)), "url": "https://x.test"])
        #expect(alipay.alipayReturnPing?.absoluteString == hook)
        for other in ["https://evil.test/x", "http://hooks.stripe.com/x", "https://stripe.com.evil.test/x"] {
            let action = try action("alipay_handle_redirect", ["native_url": .string(native(other))])
            #expect(action.alipayReturnPing == nil, "\(other)")
        }
        #expect(try action("alipay_handle_redirect", ["url": "https://x.test"]).alipayReturnPing == nil)
    }

    @Test func hostedPagesAndExpiry() throws {
        let hosted = Dictionary(
            uniqueKeysWithValues: try Self.types.compactMap { type, details, _ in
                try action(type, details).hostedURL.map { (type, $0.host ?? "") }
            })
        #expect(
            Set(hosted.keys) == [
                "cashapp_handle_redirect_or_display_qr_code", "swish_handle_redirect_or_display_qr_code",
                "oxxo_display_details", "boleto_display_details", "konbini_display_details",
                "multibanco_display_details", "verify_with_microdeposits", "display_bank_transfer_instructions",
                "paynow_display_qr_code", "promptpay_display_qr_code", "pix_display_qr_code",
                "wechat_pay_display_qr_code", "upi_handle_redirect_or_display_qr_code",
            ])
        let expiring = try Self.types.filter { type, details, _ in try action(type, details).expiresAt != nil }.map(\.0)
        #expect(
            Set(expiring) == [
                "cashapp_handle_redirect_or_display_qr_code", "swish_handle_redirect_or_display_qr_code",
                "oxxo_display_details", "boleto_display_details", "konbini_display_details",
                "multibanco_display_details", "pix_display_qr_code", "upi_handle_redirect_or_display_qr_code",
            ])
        #expect(
            try action("oxxo_display_details", ["expires_after": 1_767_225_600]).expiresAt
                == Date(timeIntervalSince1970: 1_767_225_600))
    }

    /// STPPaymentHandler's `isNextActionSuccessState` and PaymentSheet's polling deadlines.
    @Test func theSDKsRules() {
        let success = NextAction.ActionType.allCases.filter(\.isSDKSuccessState)
        #expect(
            Set(success) == [
                .oxxoDisplayDetails, .boletoDisplayDetails, .konbiniDisplayDetails, .multibancoDisplayDetails,
                .verifyWithMicrodeposits, .blikAuthorize, .upiAwaitNotification,
            ])
        #expect(NextAction.ActionType.blikAuthorize.sdkPollingDeadline == .seconds(60))
        #expect(NextAction.ActionType.upiAwaitNotification.sdkPollingDeadline == .seconds(300))
        #expect(NextAction.ActionType.paynowDisplayQRCode.sdkPollingDeadline == .seconds(3600))
        #expect(NextAction.ActionType.pixDisplayQRCode.sdkPollingDeadline == nil)
        #expect(
            NextAction.ActionType.allCases.filter { $0.kind == .awaitCustomer && $0.sdkPollingDeadline == nil }.count
                == 4)
    }

    @Test func delayedNotificationMethods() {
        #expect(
            DelayedNotification.paymentMethodTypes == ["sepa_debit", "bacs_debit", "au_becs_debit", "us_bank_account"])
        #expect(DelayedNotification.processingIsSuccess(for: "us_bank_account"))
        #expect(!DelayedNotification.processingIsSuccess(for: "card"))
        #expect(!DelayedNotification.processingIsSuccess(for: nil))
    }

    @Test func bothIntentsCarryIt() throws {
        let seti = try SetupIntent(json: [
            "id": "seti_1", "client_secret": "seti_1_secret_x", "status": "requires_action",
            "next_action": [
                "type": "verify_with_microdeposits", "verify_with_microdeposits": ["microdeposit_type": "amounts"],
            ],
        ])
        #expect(seti.nextAction?.type == .verifyWithMicrodeposits && seti.nextAction?.kind == .display)
        #expect(seti.nextAction?.details?["microdeposit_type"] == "amounts" && seti.nextAction?.redirect == nil)
    }
}

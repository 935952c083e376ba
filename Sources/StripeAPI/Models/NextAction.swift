import Foundation
import JSONRPC

/// `next_action` of a PaymentIntent or a SetupIntent. `type` is one of every type the `stripe` Python
/// package 16.1.0 defines (`PaymentIntent.NextAction`, `SetupIntent.NextAction`), plus the SDK's
/// `upi_await_notification`; anything else is `.unknown` with `rawType` as sent. `details` is the
/// type's own hash (`next_action[<type>]`) as Stripe sent it, nulls stripped as in every model.
///
/// `kind` is one pure classification of the type, as STPPaymentHandler treats it. The rules, read from
/// stripe-ios `main` of January 2026 (commit 5e5d6fb5: `STPPaymentHandler.swift` with
/// `_handleAuthenticationForCurrentAction`, `AuthenticationHandlerRegistry`, the Redirect, Voucher,
/// Polling and ThreeDS2 handlers, `STPPaymentHandler+IntentStatus.swift`'s `isNextActionSuccessState`,
/// `+IntentRetrieval.swift`'s `_retrieveAndCheckIntentForCurrentAction`, `+Challenges.swift`'s
/// `_markChallengeCanceled`; `PollingBudget.swift` of September 2025; PaymentSheet's
/// `PollingViewModel.swift`):
/// - `redirect`: the SDK opens `redirect.url` (RedirectAuthenticationHandler) and, when the customer
///   comes back or closes the page, retrieves the intent (`_retrieveAndCheckIntentForCurrentAction`). A
///   card still in `requires_action` with `use_stripe_sdk` is polled for 15 s, Amazon Pay, Revolut Pay,
///   Swish, TWINT and P24 for 5 s (`PollingBudget`); otherwise, still in `requires_action`,
///   `_markChallengeCanceled` cancels a card's 3-D Secure source and the action ends `canceled`
///   (PayNow and PromptPay excepted). Alipay's `native_url` opens its app, falling back to `url`;
///   Cash App and Swish open `mobile_auth_url` and return to the confirmation's return URL (a missing
///   one is `missingReturnURL`); WeChat Pay's iOS action opens `native_url`.
/// - `display`: the SDK opens the hosted voucher (VoucherDisplayHandler) and ends `succeeded` with the
///   intent still in `requires_action`: `isNextActionSuccessState` is true for the OXXO, Boleto, Konbini
///   and Multibanco vouchers and `verify_with_microdeposits` (which PollingAuthenticationHandler
///   completes at once: the customer verifies days later). `display_bank_transfer_instructions` is
///   unknown to the SDK (it fails as unsupported); stpd shows its instructions the same way.
/// - `awaitCustomer`: the customer pays elsewhere (a QR code, a banking app). Outside PaymentSheet the
///   SDK ends BLIK and UPI `succeeded` at once (`isNextActionSuccessState`; "the merchant integration
///   should spin and poll"); PaymentSheet polls for 60 s (BLIK), 5 min (UPI) or 1 h (PayNow), which is
///   `sdkPollingDeadline`. PayNow and PromptPay open `hosted_instructions_url` and poll behind it;
///   outside PaymentSheet the SDK refuses them as unsupported. Pix, WeChat Pay's and Klarna's QR codes
///   and `card_await_notification` are unknown to the SDK; stpd awaits them the same way, until
///   `expiresAt` when the hash has one.
/// - `stripeSDK`: `use_stripe_sdk` (3-D Secure 2). The SDK runs the native 3DS2 challenge
///   (`stripe_3ds2_fingerprint`, ThreeDS2AuthenticationHandler) or shows its hCaptcha
///   `intent_confirmation_challenge`. stpd has no native UI: it confirms with a `return_url` and
///   without `use_stripe_sdk`, so Stripe answers with `redirect_to_url` instead. Its
///   `three_d_secure_redirect` form (an intent confirmed on a server) is a web page at `stripe_js`,
///   which the SDK opens: `kind` is `redirect` for it.
/// - `unsupported`: no way to carry it on Linux (WeChat Pay's Android action needs the Android SDK) or
///   a type nobody knows (`.unknown`): the SDK fails with `unsupportedAuthenticationErrorCode`.
public struct NextAction: StripeModel, Hashable {
    public enum ActionType: String, TolerantStringEnum {
        case redirectToURL = "redirect_to_url"
        case alipayHandleRedirect = "alipay_handle_redirect"
        case cashappHandleRedirectOrDisplayQRCode = "cashapp_handle_redirect_or_display_qr_code"
        case swishHandleRedirectOrDisplayQRCode = "swish_handle_redirect_or_display_qr_code"
        case wechatPayRedirectToIOSApp = "wechat_pay_redirect_to_ios_app"
        case oxxoDisplayDetails = "oxxo_display_details"
        case boletoDisplayDetails = "boleto_display_details"
        case konbiniDisplayDetails = "konbini_display_details"
        case multibancoDisplayDetails = "multibanco_display_details"
        case verifyWithMicrodeposits = "verify_with_microdeposits"
        case displayBankTransferInstructions = "display_bank_transfer_instructions"
        case paynowDisplayQRCode = "paynow_display_qr_code"
        case promptpayDisplayQRCode = "promptpay_display_qr_code"
        case pixDisplayQRCode = "pix_display_qr_code"
        case wechatPayDisplayQRCode = "wechat_pay_display_qr_code"
        case klarnaDisplayQRCode = "klarna_display_qr_code"
        case upiHandleRedirectOrDisplayQRCode = "upi_handle_redirect_or_display_qr_code"
        /// The SDK's name for UPI's action (STPIntentActionType); the 16.1.0 package no longer has it.
        case upiAwaitNotification = "upi_await_notification"
        case blikAuthorize = "blik_authorize"
        case cardAwaitNotification = "card_await_notification"
        case useStripeSDK = "use_stripe_sdk"
        case wechatPayRedirectToAndroidApp = "wechat_pay_redirect_to_android_app"
        case unknown

        public var kind: Kind {
            switch self {
            case .redirectToURL, .alipayHandleRedirect, .cashappHandleRedirectOrDisplayQRCode,
                .swishHandleRedirectOrDisplayQRCode, .wechatPayRedirectToIOSApp:
                .redirect
            case .oxxoDisplayDetails, .boletoDisplayDetails, .konbiniDisplayDetails, .multibancoDisplayDetails,
                .verifyWithMicrodeposits, .displayBankTransferInstructions:
                .display
            case .paynowDisplayQRCode, .promptpayDisplayQRCode, .pixDisplayQRCode, .wechatPayDisplayQRCode,
                .klarnaDisplayQRCode, .upiHandleRedirectOrDisplayQRCode, .upiAwaitNotification, .blikAuthorize,
                .cardAwaitNotification:
                .awaitCustomer
            case .useStripeSDK: .stripeSDK
            case .wechatPayRedirectToAndroidApp, .unknown: .unsupported
            }
        }

        /// STPPaymentHandler's `isNextActionSuccessState`: an intent still in `requires_action` with
        /// this action counts as a successful confirmation.
        public var isSDKSuccessState: Bool {
            switch self {
            case .oxxoDisplayDetails, .boletoDisplayDetails, .konbiniDisplayDetails, .multibancoDisplayDetails,
                .verifyWithMicrodeposits, .blikAuthorize, .upiAwaitNotification:
                true
            default: false
            }
        }

        /// How long PaymentSheet's PollingViewModel waits for the customer (BLIK 60 s, UPI 5 min,
        /// PayNow 1 h; PromptPay polls as PayNow does); nil where the SDK sets no deadline.
        public var sdkPollingDeadline: Duration? {
            switch self {
            case .blikAuthorize: .seconds(60)
            case .upiAwaitNotification, .upiHandleRedirectOrDisplayQRCode: .seconds(300)
            case .paynowDisplayQRCode, .promptpayDisplayQRCode: .seconds(3600)
            default: nil
            }
        }
    }

    /// What an app does with an action; see the type's doc comment for the SDK's rule for each.
    public enum Kind: String, Sendable, CaseIterable {
        case redirect, display, awaitCustomer, stripeSDK, unsupported
    }

    public var type: ActionType
    /// The API's `type` string as sent.
    public var rawType: String
    /// `next_action[<type>]` as Stripe sent it (nulls stripped); nil when absent.
    public var details: JSONValue?
    public var allResponseFields: JSONValue

    /// The type's kind, except that `use_stripe_sdk` of type `three_d_secure_redirect` (what Stripe
    /// answers for an intent confirmed on a server, such as a subscription's first payment) is a
    /// plain web page the SDK opens (ThreeDS2AuthenticationHandler's `handleThreeDS2Redirect`): a
    /// redirect.
    public var kind: Kind { isThreeDSecureRedirect ? .redirect : type.kind }

    /// `use_stripe_sdk` asking for the 3-D Secure page at `stripe_js` rather than the native SDK.
    public var isThreeDSecureRedirect: Bool { type == .useStripeSDK && sdkType == "three_d_secure_redirect" }

    /// `use_stripe_sdk[type]`: `stripe_3ds2_fingerprint`, `three_d_secure_redirect`,
    /// `intent_confirmation_challenge`; nil for other types.
    public var sdkType: String? { type == .useStripeSDK ? detailFields?.string("type") : nil }

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        rawType = try f.requireString("type")
        type = ActionType(apiValue: rawType)
        details = f.object(rawType)
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }

    private var detailFields: ModelFields? {
        details.flatMap { try? ModelFields($0, codingPath: []) }
    }

    /// The page a redirect opens and, when the hash carries it, the return URL Stripe echoes back:
    /// `redirect_to_url` and Alipay's `url` (Linux has no Alipay app for `native_url`) with their
    /// `return_url`; Cash App's and Swish's `mobile_auth_url` and WeChat Pay's iOS `native_url`, which
    /// return to the confirmation's return URL; `use_stripe_sdk`'s `three_d_secure_redirect` page
    /// (`stripe_js`). Nil when the hash lacks a URL that parses (the SDK's "missing expected details").
    public var redirect: (url: URL, returnURL: URL?)? {
        guard let f = detailFields else { return nil }
        let url: URL?
        switch type {
        case .redirectToURL, .alipayHandleRedirect: url = f.url("url")
        case .cashappHandleRedirectOrDisplayQRCode, .swishHandleRedirectOrDisplayQRCode: url = f.url("mobile_auth_url")
        case .wechatPayRedirectToIOSApp: url = f.url("native_url")
        case .useStripeSDK where f.string("type") == "three_d_secure_redirect": url = f.url("stripe_js")
        default: url = nil
        }
        return url.map { ($0, f.url("return_url")) }
    }

    /// The return URL inside Alipay's `native_url` (`return_url=`, percent-encoded twice), which the
    /// SDK requests before re-reading the intent so that its status is up to date (`marlinReturnURL`,
    /// `_pingMarlinIfNecessary`). Only an https URL on a stripe.com host: a daemon fetches nothing else.
    public var alipayReturnPing: URL? {
        guard type == .alipayHandleRedirect, let native = detailFields?.string("native_url")?.removingPercentEncoding,
            let range = native.range(of: "return_url=[^&]*", options: .regularExpression),
            let decoded = String(native[range].dropFirst("return_url=".count)).removingPercentEncoding,
            let url = URL(string: decoded), url.scheme == "https", let host = url.host,
            host == "stripe.com" || host.hasSuffix(".stripe.com")
        else { return nil }
        return url
    }

    /// A voucher's page (OXXO, Boleto, Konbini, Multibanco: `hosted_voucher_url`), which the SDK's
    /// VoucherDisplayHandler opens; nil for any other type.
    public var voucherPage: URL? {
        switch type {
        case .oxxoDisplayDetails, .boletoDisplayDetails, .konbiniDisplayDetails, .multibancoDisplayDetails:
            detailFields?.url("hosted_voucher_url")
        default: nil
        }
    }

    /// The page Stripe hosts for the customer: the voucher (`hosted_voucher_url`), the QR code or
    /// transfer instructions (`hosted_instructions_url`), or the microdeposit form
    /// (`hosted_verification_url`).
    public var hostedURL: URL? {
        guard let f = detailFields else { return nil }
        return f.url("hosted_voucher_url") ?? f.url("hosted_instructions_url") ?? f.url("hosted_verification_url")
    }

    /// When the voucher or code stops being payable: `expires_at`, OXXO's `expires_after`, or the
    /// `qr_code`'s `expires_at` (Cash App, Swish, UPI).
    public var expiresAt: Date? {
        guard let f = detailFields else { return nil }
        let qr = f.object("qr_code").flatMap { try? ModelFields($0, codingPath: []) }
        return f.date("expires_at") ?? f.date("expires_after") ?? qr?.date("expires_at")
    }
}

/// STPPaymentHandler's `_isProcessingIntentSuccess`: the delayed-notification payment methods, whose
/// intent in `processing` after its action is a completed confirmation (funds take days to arrive).
/// For every other type `processing` is not success: the SDK polls it for 30 s and then fails with
/// `intentStatusErrorCode`. Read from stripe-ios `main` of January 2026 (commit 5e5d6fb5,
/// `STPPaymentHandler+IntentStatus.swift`); SDKs that still had Sofort listed it here too.
public enum DelayedNotification {
    public static let paymentMethodTypes: Set<String> = [
        "sepa_debit", "bacs_debit", "au_becs_debit", "us_bank_account",
    ]

    /// Whether `processing` is success for an intent paid with `paymentMethodType` (nil: unknown, not).
    public static func processingIsSuccess(for paymentMethodType: String?) -> Bool {
        paymentMethodType.map(paymentMethodTypes.contains) ?? false
    }
}

import Foundation
import JSONRPC

/// A Source, decoded as the SDK's `STPSource` (spec §6.1–6.2).
///
/// Required: `id`, `status`, `type` (strings) and a `livemode` key (any value; `"true"`-like strings
/// count as true, a value that reads as no boolean counts as true, the SDK's default). Everything else
/// is optional and tolerant; `details` is the sub-object keyed by the raw `type` string.
public struct Source: StripeModel, Hashable {
    public enum Flow: String, TolerantStringEnum {
        case none, redirect
        case codeVerification = "code_verification"
        case receiver, unknown
    }

    public enum Status: String, TolerantStringEnum {
        case pending, chargeable, consumed, canceled, failed, unknown
    }

    public enum Usage: String, TolerantStringEnum {
        case reusable
        case singleUse = "single_use"
        case unknown
    }

    public enum SourceType: String, TolerantStringEnum {
        case bancontact, card, giropay
        case iDEAL = "ideal"
        case sepaDebit = "sepa_debit"
        case sofort
        case threeDSecure = "three_d_secure"
        case alipay, p24, eps, multibanco
        case weChatPay = "wechat"
        case klarna
        case unknown
    }

    /// `owner`: every field optional.
    public struct Owner: StripeModel, Hashable {
        public var address: StripeAddress?
        public var email: String?
        public var name: String?
        public var phone: String?
        public var verifiedAddress: StripeAddress?
        public var verifiedEmail: String?
        public var verifiedName: String?
        public var verifiedPhone: String?
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            address = f.model("address")
            email = f.string("email")
            name = f.string("name")
            phone = f.string("phone")
            verifiedAddress = f.model("verified_address")
            verifiedEmail = f.string("verified_email")
            verifiedName = f.string("verified_name")
            verifiedPhone = f.string("verified_phone")
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    /// `receiver`: requires `address` (the string to pay to).
    public struct Receiver: StripeModel, Hashable {
        public var address: String
        public var amountCharged: Int?
        public var amountReceived: Int?
        public var amountReturned: Int?
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            address = try f.requireString("address")
            amountCharged = f.int("amount_charged")
            amountReceived = f.int("amount_received")
            amountReturned = f.int("amount_returned")
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    /// `redirect`: requires `return_url`, `status` and `url`, each URL non-empty and parseable;
    /// otherwise the Source's `redirect` is nil (the Source itself still decodes).
    public struct Redirect: StripeModel, Hashable {
        public enum Status: String, TolerantStringEnum {
            case pending, succeeded, failed
            case notRequired = "not_required"
            case unknown
        }

        public var returnURL: URL
        public var status: Status
        public var url: URL
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            status = Status(apiValue: try f.requireString("status"))
            _ = try f.requirePresent("return_url")
            _ = try f.requirePresent("url")
            guard let returnURL = f.url("return_url") else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: f.path("return_url"), debugDescription: "not a URL"))
            }
            guard let url = f.url("url") else {
                throw DecodingError.dataCorrupted(.init(codingPath: f.path("url"), debugDescription: "not a URL"))
            }
            self.returnURL = returnURL
            self.url = url
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    /// `verification`: requires `status`.
    public struct Verification: StripeModel, Hashable {
        public enum Status: String, TolerantStringEnum {
            case pending, succeeded, failed, unknown
        }

        public var attemptsRemaining: Int?
        public var status: Status
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            status = Status(apiValue: try f.requireString("status"))
            attemptsRemaining = f.int("attempts_remaining")
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    public var id: String
    public var amount: Int?
    public var clientSecret: String?
    public var created: Date?
    public var currency: String?
    /// `.unknown` when absent.
    public var flow: Flow
    public var livemode: Bool
    public var owner: Owner?
    public var receiver: Receiver?
    public var redirect: Redirect?
    public var status: Status
    public var type: SourceType
    /// The API's `type` string as sent (`details` is keyed by it).
    public var rawType: String
    /// `.unknown` when absent.
    public var usage: Usage
    public var verification: Verification?
    /// `source[rawType]` when it is an object (e.g. `sofort`, `wechat`, `card`).
    public var details: [String: JSONValue]?
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        id = try f.requireString("id")
        let rawStatus = try f.requireString("status")
        rawType = try f.requireString("type")
        _ = try f.requirePresent("livemode")
        status = Status(apiValue: rawStatus)
        type = SourceType(apiValue: rawType)
        livemode = f.bool("livemode") ?? true
        amount = f.int("amount")
        clientSecret = f.string("client_secret")
        created = f.date("created")
        currency = f.string("currency")
        flow = f.enumValue("flow") ?? .unknown
        owner = f.model("owner")
        receiver = f.model("receiver")
        redirect = f.model("redirect")
        usage = f.enumValue("usage") ?? .unknown
        verification = f.model("verification")
        details = f.object(rawType)?.objectValue
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }

    /// What `STPRedirectContext(source:)` takes from a Source (spec §3.2).
    public struct RedirectTargets: Sendable, Hashable {
        /// An app URL to open first: Alipay's `native_url`, WeChat Pay's `ios_native_url`.
        public var nativeURL: URL?
        /// `redirect.url`.
        public var redirectURL: URL?
        /// `redirect.return_url`; for WeChat Pay `<APPID>://pay/`, APPID being the native URL's first
        /// path segment (`weixin://app/<APPID>/pay/?…`).
        public var returnURL: URL?
    }

    /// Nil unless the flow is `redirect` (or the type WeChat Pay), the status is pending or
    /// chargeable, and there is a native or redirect URL to open.
    public var redirectTargets: RedirectTargets? {
        guard flow == .redirect || type == .weChatPay, status == .pending || status == .chargeable else {
            return nil
        }
        func detailURL(_ key: String) -> URL? {
            guard let text = details?[key]?.stringValue, !text.isEmpty else { return nil }
            return URL.strict(text)
        }
        var targets = RedirectTargets(redirectURL: redirect?.url, returnURL: redirect?.returnURL)
        switch type {
        case .alipay: targets.nativeURL = detailURL("native_url")
        case .weChatPay:
            targets.nativeURL = detailURL("ios_native_url")
            let segments = targets.nativeURL?.path.split(separator: "/") ?? []
            targets.returnURL = segments.first.flatMap { URL(string: "\($0)://pay/") }
        default: break
        }
        guard targets.nativeURL != nil || targets.redirectURL != nil else { return nil }
        return targets
    }

    /// The SDK's `isReusable`: anything but single-use.
    public var isReusable: Bool { usage != .singleUse }

    /// For a card Source: `card.tokenization_method == "apple_pay"` (what the SDK's Apple Pay filter
    /// looks at in a customer's legacy sources).
    public var isApplePayCard: Bool {
        type == .card && details?["tokenization_method"]?.stringValue == "apple_pay"
    }
}

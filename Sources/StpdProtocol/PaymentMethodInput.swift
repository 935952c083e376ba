import Foundation
import JSONRPC
import StripeAPI

/// How to pay an intent: an existing PaymentMethod (`id`) or exactly one new one, a member per
/// payment-method type (`usBankAccount: {...}`, `paypal: {}`). One table, `PaymentMethodInput.types`,
/// drives the schema, the decoding of each member's arguments and the `PaymentMethodData` it makes.
public struct PaymentMethodInput: Codable, Sendable, Hashable {
    public typealias BillingDetails = PaymentIntentConfirmParams.BillingDetails

    public var id: String?
    public var billingDetails: BillingDetails?
    /// The new PaymentMethod's metadata (`payment_method_data[metadata]`), as the SDK's
    /// `STPPaymentMethodParams.metadata`: at most 50 keys of 40 characters, values of 500.
    public var metadata: [String: String]?
    /// The new payment methods given, by member name, with their arguments as sent (the schema has
    /// checked them); `confirmParams` takes exactly one of these or `id`.
    public var new: [String: JSONValue]

    public init(
        id: String? = nil, new: [String: JSONValue] = [:], billingDetails: BillingDetails? = nil,
        metadata: [String: String]? = nil
    ) {
        self.id = id
        self.new = new
        self.billingDetails = billingDetails
        self.metadata = metadata
    }

    /// One new payment method: `PaymentMethodInput("boleto", ["taxId": "000.000.000-00"])`.
    public init(
        _ member: String, _ arguments: JSONValue = [:], billingDetails: BillingDetails? = nil,
        metadata: [String: String]? = nil
    ) {
        self.init(new: [member: arguments], billingDetails: billingDetails, metadata: metadata)
    }

    /// The members that are not payment-method types.
    static let shared: Set<String> = ["id", "billingDetails", "metadata"]

    /// The new card, when that is the member given (the card checks run before the confirmation).
    public var card: CardInput? { new["card"].flatMap { try? JSONCoding.typed(CardInput.self, from: $0) } }

    /// The card of a `raw` member of type `card`, in Stripe's own field names (`raw: {type: card,
    /// card: {number, exp_month, exp_year, cvc}}`): checked like `card`, so the raw form is no way
    /// around the card checks. A field missing or of the wrong type reads as empty, and is refused.
    public var rawCard: CardInput? {
        guard case .object(let raw)? = new["raw"], raw["type"] == "card" else { return nil }
        let card = raw["card"]?.objectValue ?? [:]
        func int(_ key: String) -> Int {
            switch card[key] {
            case .int(let value)?: Int(clamping: value)
            case .string(let text)?: Int(text) ?? 0
            default: 0
            }
        }
        return CardInput(
            number: card["number"]?.stringValue ?? "", expMonth: int("exp_month"), expYear: int("exp_year"),
            cvc: card["cvc"]?.stringValue)
    }

    /// A member of the table: its name, its schema, arguments it accepts, and how its arguments
    /// become the Stripe type.
    struct Member: Sendable {
        let name: String
        let schema: JSONSchema
        let example: JSONValue
        let make: @Sendable (JSONValue) throws -> PaymentMethodData
    }

    /// The member names, in the order errors list them.
    public static let members = ["id"] + types.map(\.name)

    /// Arguments each new-payment-method member accepts, with Stripe's test values where they matter
    /// (the US test bank's routing number, BLIK's test code, a test CPF).
    public static let examples = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0.example) })

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: MemberKey.self)
        id = try container.decodeIfPresent(String.self, forKey: MemberKey("id"))
        billingDetails = try container.decodeIfPresent(BillingDetails.self, forKey: MemberKey("billingDetails"))
        metadata = try container.decodeIfPresent([String: String].self, forKey: MemberKey("metadata"))
        new = [:]
        for key in container.allKeys where !Self.shared.contains(key.stringValue) {
            new[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: MemberKey.self)
        try container.encodeIfPresent(id, forKey: MemberKey("id"))
        try container.encodeIfPresent(billingDetails, forKey: MemberKey("billingDetails"))
        try container.encodeIfPresent(metadata, forKey: MemberKey("metadata"))
        for (name, arguments) in new { try container.encode(arguments, forKey: MemberKey(name)) }
    }

    /// The confirmation for `clientSecret` (a SetupIntent's with `setupIntent`). `path` is where
    /// this object sits in the method's params.
    public func confirmParams(
        clientSecret: String, returnURL: String?, at path: String? = nil, setupIntent: Bool = false
    ) throws(RPCError) -> PaymentIntentConfirmParams {
        try Self.checkReturnURL(returnURL)
        let (prefix, kind) = setupIntent ? ("seti_", "SetupIntent") : ("pi_", "PaymentIntent")
        guard clientSecret.hasPrefix(prefix), clientSecret.contains("_secret_") else {
            throw RPCError.invalidParams(
                "not a \(kind) client secret (\(prefix)..._secret_...)", parameter: "clientSecret")
        }
        if let unknown = new.keys.sorted().first(where: { !Self.members.contains($0) }) {
            throw RPCError.invalidParams("no payment method type \(unknown)", parameter: memberPath(unknown, path))
        }
        let given = (id == nil ? [] : ["id"]) + Self.members.filter { new[$0] != nil }
        guard given.count == 1 else {
            let detail = given.isEmpty ? "" : " (got \(given.joined(separator: ", ")))"
            throw RPCError.invalidParams(
                "give exactly one of: \(Self.members.joined(separator: ", "))" + detail,
                parameter: given.count > 1 ? memberPath(given[1], path) : (path ?? "params"))
        }
        guard let name = given.first, let member = Self.types.first(where: { $0.name == name }),
            let arguments = new[name]
        else {
            for (name, given) in [("billingDetails", billingDetails != nil), ("metadata", metadata != nil)] where given
            {
                throw RPCError.invalidParams(
                    "\(name) goes with a new payment method, not an existing id", parameter: memberPath(name, path))
            }
            return PaymentIntentConfirmParams(
                clientSecret: clientSecret, paymentMethodID: id ?? "", returnURL: returnURL)
        }
        let data: PaymentMethodData
        do { data = try member.make(arguments) } catch let missing as MissingArgument {
            throw RPCError.invalidParams(
                "\(name) needs \(missing.key)", parameter: memberPath("\(name).\(missing.key)", path))
        } catch {
            throw RPCError.invalidParams("\(name): \(error)", parameter: memberPath(name, path))
        }
        if setupIntent, !data.confirmsSetupIntents {
            throw RPCError.invalidParams(
                "\(name) cannot be set up for later payments (setupIntent.confirm)", parameter: memberPath(name, path))
        }
        for field in data.requiredBillingDetails where billingDetails?.value(at: field) == nil {
            throw RPCError.invalidParams(
                "\(name) needs billingDetails.\(field)", parameter: memberPath("billingDetails.\(field)", path))
        }
        try checkMetadata(at: path)
        var confirm = PaymentIntentConfirmParams(
            clientSecret: clientSecret, paymentMethodData: data, billingDetails: billingDetails, returnURL: returnURL)
        confirm.paymentMethodMetadata = metadata
        return confirm
    }

    /// Stripe's limits on metadata, checked before the request; `[` and `]` would split a key in
    /// the form.
    private func checkMetadata(at path: String?) throws(RPCError) {
        guard let metadata else { return }
        guard metadata.count <= 50 else {
            throw RPCError.invalidParams(
                "metadata has \(metadata.count) keys; Stripe takes at most 50", parameter: memberPath("metadata", path))
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let at = memberPath("metadata.\(key.prefix(40))", path)
            guard !key.isEmpty, key.count <= 40, !key.contains(where: { "[]".contains($0) }) else {
                throw RPCError.invalidParams(
                    "a metadata key is 1 to 40 characters, without [ or ]", parameter: at)
            }
            guard value.count <= 500 else {
                throw RPCError.invalidParams("a metadata value is at most 500 characters", parameter: at)
            }
        }
    }

    /// A return URL is `"loopback"` (stpd's own, on 127.0.0.1) or an absolute URL that parses as
    /// the SDK reads one: Stripe would send the customer to anything else, and no redirect session
    /// could take them back.
    public static func checkReturnURL(_ returnURL: String?, parameter: String = "returnURL") throws(RPCError) {
        guard let returnURL, returnURL != returnURLLoopback else { return }
        guard let url = URL.strict(returnURL), let scheme = url.scheme, !scheme.isEmpty else {
            throw RPCError.invalidParams(
                "not \"loopback\" nor an absolute URL with a scheme: \(returnURL)", parameter: parameter)
        }
    }

    /// The `returnURL` that asks for stpd's loopback return.
    public static let returnURLLoopback = "loopback"

    public static let schema: JSONSchema = {
        var properties = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0.schema) })
        properties["id"] = .string(
            "An existing PaymentMethod (pm_…; legacy card_… and src_… ids work too)", pattern: "^[A-Za-z0-9_]+$")
        properties["billingDetails"] = billingDetailsSchema
        properties["metadata"] = JSONSchema(
            [
                "type": "object",
                "description":
                    "With a new payment method: its metadata (at most 50 keys of 1 to 40 characters, without [ or ]; values of at most 500)",
                "additionalProperties": ["type": "string"],
            ])
        return JSONSchema.object(
            properties,
            description:
                "Exactly one of id or a new payment method, a member per type; each type's description names the billingDetails Stripe requires for it"
        )
    }()

    static let billingDetailsSchema = JSONSchema.object(
        [
            "name": .string("The payer's full name"), "email": .string("The payer's email"),
            "phone": .string("The payer's phone number"),
            "address": .object(
                [
                    "line1": .string("Street"), "line2": .string("Street, more"), "city": .string("City"),
                    "state": .string("State, county or province"), "postalCode": .string("Postal code"),
                    "country": SourceConstructor.country("Country"),
                ], description: "The payer's billing address"),
            "taxId": .string("The payer's tax id (CPF or CNPJ in Brazil)"),
        ],
        description: "With a new payment method; its type's description says which fields Stripe requires")
}

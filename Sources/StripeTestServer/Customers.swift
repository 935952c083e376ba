import Foundation
import JSONRPC

// Param helpers.
extension StripeTestState.Call {
    var id: String { captures[0] }

    func string(_ key: String) -> String? { params[key]?.stringValue }

    func int(_ key: String, in object: Obj? = nil, display: String? = nil) throws(APIError) -> Int64? {
        guard let v = (object ?? params)[key] else { return nil }
        guard let s = v.stringValue, let i = Int64(s) else {
            throw .invalid("Invalid integer: \(v.stringValue ?? "")", param: display ?? key)
        }
        return i
    }

    func require(_ key: String) throws(APIError) -> String {
        guard let s = params[key]?.stringValue, !s.isEmpty else { throw .missing(key) }
        return s
    }

    var expand: [String] { params["expand"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
}

extension StripeTestState {
    static func addressObject(_ input: Obj?) -> JSONValue {
        var o: Obj = [:]
        for k in addressKeys { o[k] = input?[k]?.stringValue.map(JSONValue.string) ?? .null }
        return .object(o)
    }

    /// `metadata[k]=v` merges; `metadata[k]=` removes k; `metadata=` clears all.
    static func mergeMetadata(_ existing: JSONValue?, _ param: JSONValue?) -> JSONValue {
        var m = existing?.objectValue ?? [:]
        switch param {
        case .string(""): m = [:]
        case .object(let o):
            for (k, v) in o {
                if v.stringValue == "" { m[k] = nil } else { m[k] = v }
            }
        default: break
        }
        return .object(m)
    }

    static func shippingObject(_ param: JSONValue?, existing: JSONValue?) throws(APIError) -> JSONValue {
        guard let param else { return existing ?? .null }
        if param.stringValue == "" { return .null }
        guard let o = param.objectValue else { throw .invalid("Invalid hash", param: "shipping") }
        guard let name = o["name"]?.stringValue, !name.isEmpty else { throw .missing("shipping[name]") }
        guard let address = o["address"]?.objectValue, let line1 = address["line1"]?.stringValue, !line1.isEmpty else {
            throw .missing("shipping[address][line1]")
        }
        return [
            "address": addressObject(address),
            "name": .string(name),
            "phone": o["phone"]?.stringValue.map(JSONValue.string) ?? .null,
        ]
    }

    func customer(_ id: String) throws(APIError) -> Obj {
        guard let c = customers[id], c["deleted"] == nil else { throw .notFound("customer", id) }
        return c
    }

    func renderCustomer(_ c: Obj, expand: [String]) -> JSONValue {
        var c = c
        if expand.contains("sources") {
            c["sources"] = [
                "object": "list", "data": [], "has_more": false, "total_count": 0,
                "url": .string("/v1/customers/\(c["id"]?.stringValue ?? "")/sources"),
            ]
        }
        if expand.contains("invoice_settings.default_payment_method"),
            var settings = c["invoice_settings"]?.objectValue,
            let pm = settings["default_payment_method"]?.stringValue, let obj = paymentMethods[pm]
        {
            settings["default_payment_method"] = .object(obj)
            c["invoice_settings"] = .object(settings)
        }
        return .object(c)
    }

    func applyCustomerParams(_ c: inout Obj, _ call: StripeTestState.Call) throws(APIError) {
        for key in ["email", "name", "description", "phone"] where call.params[key] != nil {
            let v = call.string(key) ?? ""
            c[key] = v.isEmpty ? .null : .string(v)
        }
        if let balance = try call.int("balance") { c["balance"] = .int(balance) }
        if let tax = call.string("tax_exempt") {
            guard ["none", "exempt", "reverse"].contains(tax) else {
                throw .invalid("Invalid tax_exempt: must be one of none, exempt, or reverse", param: "tax_exempt")
            }
            c["tax_exempt"] = .string(tax)
        }
        if call.params["metadata"] != nil { c["metadata"] = Self.mergeMetadata(c["metadata"], call.params["metadata"]) }
        if call.params["shipping"] != nil {
            c["shipping"] = try Self.shippingObject(call.params["shipping"], existing: c["shipping"])
        }
        if let address = call.params["address"] {
            c["address"] = address.stringValue == "" ? .null : Self.addressObject(address.objectValue)
        }
        if let locales = call.params["preferred_locales"]?.arrayValue { c["preferred_locales"] = .array(locales) }
        if let source = call.string("default_source") { c["default_source"] = source.isEmpty ? .null : .string(source) }
        if let pm = call.params["invoice_settings"]?["default_payment_method"]?.stringValue {
            var settings = c["invoice_settings"]?.objectValue ?? [:]
            if !pm.isEmpty {
                guard let obj = paymentMethods[pm] else {
                    throw .notFound("PaymentMethod", pm, param: "invoice_settings[default_payment_method]")
                }
                guard obj["customer"]?.stringValue == c["id"]?.stringValue else {
                    throw .invalid(
                        "The customer does not have a payment method with the ID \(pm). The payment method must be attached to the customer.",
                        param: "invoice_settings[default_payment_method]", code: "resource_missing")
                }
            }
            settings["default_payment_method"] = pm.isEmpty ? .null : .string(pm)
            c["invoice_settings"] = .object(settings)
        }
    }

    func createCustomer(_ call: inout Call) throws(APIError) -> JSONValue {
        let id = IDs.make("cus_", length: 14)
        var c: Obj = [
            "id": .string(id), "object": "customer", "address": .null, "balance": 0, "created": .int(Int64(now)),
            "currency": .null, "default_source": .null, "delinquent": false, "description": .null, "discount": .null,
            "email": .null, "invoice_prefix": .string(String(IDs.make("", length: 8).uppercased())),
            "invoice_settings": [
                "custom_fields": .null, "default_payment_method": .null, "footer": .null, "rendering_options": .null,
            ],
            "livemode": false, "metadata": [:], "name": .null, "next_invoice_sequence": 1, "phone": .null,
            "preferred_locales": [], "shipping": .null, "tax_exempt": "none", "test_clock": .null,
        ]
        try applyCustomerParams(&c, call)
        customers[id] = c
        nextSeq(id)
        if let pm = call.string("payment_method"), !pm.isEmpty {
            do throws(APIError) {
                _ = try attach(pm, to: id, param: "payment_method")
            } catch {
                customers[id] = nil
                throw error
            }
        }
        return renderCustomer(customers[id]!, expand: call.expand)
    }

    func retrieveCustomer(_ call: inout Call) throws(APIError) -> JSONValue {
        try requireCustomerScope(call.auth, call.id)
        guard let c = customers[call.id] else { throw .notFound("customer", call.id) }
        if c["deleted"] != nil { return ["id": .string(call.id), "object": "customer", "deleted": true] }
        return renderCustomer(c, expand: call.expand)
    }

    func updateCustomer(_ call: inout Call) throws(APIError) -> JSONValue {
        try requireCustomerScope(call.auth, call.id)
        var c = try customer(call.id)
        try applyCustomerParams(&c, call)
        customers[call.id] = c
        return renderCustomer(c, expand: call.expand)
    }

    func deleteCustomer(_ call: inout Call) throws(APIError) -> JSONValue {
        _ = try customer(call.id)
        customers[call.id]?["deleted"] = true
        for (id, pm) in paymentMethods where pm["customer"]?.stringValue == call.id {
            paymentMethods[id]?["customer"] = .null
        }
        return ["id": .string(call.id), "object": "customer", "deleted": true]
    }

    // MARK: Ephemeral keys

    func createEphemeralKey(_ call: inout Call) throws(APIError) -> JSONValue {
        guard let version = call.request.header("stripe-version"), !version.isEmpty else {
            throw .invalid(
                "Stripe-Version header is required when creating ephemeral keys. You must pass the API version that your client library or mobile SDK uses, e.g. 'Stripe-Version: 2020-08-27'."
            )
        }
        _ = version
        if call.params["issuing_card"] != nil {
            throw .invalid("This test server does not support issuing cards.", param: "issuing_card")
        }
        let customerID = try call.require("customer")
        _ = try customer(customerID)
        let created = now
        let secret = IDs.make("ek_test_", length: 48)
        let key: Obj = [
            "id": .string(IDs.make("ephkey_")), "object": "ephemeral_key",
            "associated_objects": [["id": .string(customerID), "type": "customer"]],
            "created": .int(Int64(created)), "expires": .int(Int64(created + configuration.ephemeralKeyLifetime)),
            "livemode": false, "secret": .string(secret),
        ]
        ephemeralKeys[secret] = key
        return .object(key)
    }

    func deleteEphemeralKey(_ call: inout Call) throws(APIError) -> JSONValue {
        guard let (secret, key) = ephemeralKeys.first(where: { $0.value["id"]?.stringValue == call.id }) else {
            throw .notFound("ephemeral key", call.id)
        }
        var k = key
        k["_revoked"] = true
        k["expires"] = .int(Int64(now))
        ephemeralKeys[secret] = k
        var shown = k
        shown["_revoked"] = nil
        shown["secret"] = nil
        return .object(shown)
    }
}

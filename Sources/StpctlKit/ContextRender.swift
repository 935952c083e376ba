import ArgumentParser
import Foundation
import JSONRPC

/// How `stpctl context ...` prints for people. Works on the JSON of a `payment_context` (the
/// daemon's view of an STPPaymentContext), so it is tested without a daemon.
public enum ContextRender {
    public static let tableHeader = ["ID", "STATUS", "SESSION", "TOTAL", "SELECTED", "STATE", "LAST RESULT", "UPDATED"]

    /// Contexts as an aligned table, one row per context under a header.
    public static func contexts(_ contexts: [JSONValue], timeZone: TimeZone = .current) -> String {
        guard !contexts.isEmpty else { return "no payment contexts" }
        let rows = contexts.map { context in
            [
                text(context["id"]), text(context["status"]), text(context["customerSession"]), total(context),
                text(context["selectedPaymentMethod"]), state(context), lastResult(context["lastResult"]) ?? "-",
                CustomerRender.time(context["updatedAt"], timeZone: timeZone),
            ]
        }
        return CustomerRender.grid([tableHeader] + rows)
    }

    /// One context, `key: value` lines; lists (summary items, options, shipping methods) one item
    /// a line under their key, the selected option or method marked with `*`.
    public static func context(_ context: JSONValue, now: Date = Date(), timeZone: TimeZone = .current) -> String {
        let currency = context["currency"]?.stringValue ?? ""
        var rows: [(String, String)] = [
            ("context", text(context["id"])), ("status", text(context["status"])),
            ("session", text(context["customerSession"])),
            ("amount", money(context["amount"], currency)), ("total", total(context)),
        ]
        if let items = context["paymentSummaryItems"]?.arrayValue, !items.isEmpty {
            rows.append(("summary", summaryItems(items, currency: currency)))
        }
        let loading = context["loading"] == .bool(true)
        rows.append(("loading", loading ? "yes" : "no"))
        if let error = context["loadError"], error != .null {
            rows.append(("load error", SourceRender.errorLine(error)))
        }
        rows.append(("options", options(context)))
        rows.append(("ready to pay", context["isReadyForPayment"] == .bool(true) ? "yes" : "no"))
        rows += shipping(context)
        rows.append(("request state", text(context["requestState"])))
        rows.append(("needs", context["needs"]?.stringValue ?? "nothing"))
        if let pending = context["pendingAction"], pending.objectValue != nil {
            rows.append(("pending action", pendingAction(pending)))
            rows.append(("answer by", deadline(pending["deadline"], now: now, timeZone: timeZone)))
        }
        if let redirect = context["redirect"]?.stringValue { rows.append(("redirect", redirect)) }
        rows.append(("last result", lastResult(context["lastResult"]) ?? "none"))
        rows.append(("created", CustomerRender.time(context["createdAt"], timeZone: timeZone)))
        rows.append(("updated", CustomerRender.time(context["updatedAt"], timeZone: timeZone)))
        return table(rows)
    }

    /// `paymentAmount` (amount plus shipping) with its currency: `15.99 USD`.
    public static func total(_ context: JSONValue) -> String {
        money(context["paymentAmount"], context["currency"]?.stringValue ?? "")
    }

    /// What the context is at, in a word or two: `loading`, `load failed`, `pending pact_1`,
    /// `needs paymentOption`, `requestingPayment`, `ready` or `not ready`.
    public static func state(_ context: JSONValue) -> String {
        if context["loading"] == .bool(true) { return "loading" }
        if let pending = context["pendingAction"]?["id"]?.stringValue { return "pending \(pending)" }
        if let needs = context["needs"]?.stringValue { return "needs \(needs)" }
        if let request = context["requestState"]?.stringValue, request != "none" { return request }
        if let error = context["loadError"], error != .null { return "load failed" }
        return context["isReadyForPayment"] == .bool(true) ? "ready" : "not ready"
    }

    /// The last didFinish: `success`, `userCancellation`, `error 5003: Your card was declined`; nil
    /// before the first.
    public static func lastResult(_ result: JSONValue?) -> String? {
        guard let result, result.objectValue != nil else { return nil }
        let status = text(result["status"])
        guard let error = result["error"], error != .null else { return status }
        return status == "error" ? SourceRender.errorLine(error) : "\(status), \(SourceRender.errorLine(error))"
    }

    /// `pact_1 didCreatePaymentResult: pm_1 Visa 4242 12/30`, or with the address a
    /// didUpdateShippingAddress asks about.
    public static func pendingAction(_ pending: JSONValue) -> String {
        let head = "\(text(pending["id"])) \(text(pending["kind"]))"
        let payload = pending["payload"]
        if let method = payload?["paymentMethod"], method.objectValue != nil {
            return head + ": " + CustomerRender.paymentMethodLine(method)
        }
        if let address = payload?["address"], address.objectValue != nil { return head + ": " + addressLine(address) }
        return head
    }

    /// `Jenny Rosen, 1 Main St, Springfield CA 94105, US, +1 555 555 0100, jenny@example.com`:
    /// a ShippingAddressParams (camelCase `postalCode`, unlike Stripe's own form).
    public static func addressLine(_ shipping: JSONValue) -> String {
        func field(_ value: JSONValue?) -> String? {
            guard let text = value?.stringValue, !text.isEmpty else { return nil }
            return text
        }
        let address = shipping["address"]
        let cityLine = [field(address?["city"]), field(address?["state"]), field(address?["postalCode"])]
            .compactMap { $0 }.joined(separator: " ")
        let parts = [
            field(shipping["name"]), field(address?["line1"]), field(address?["line2"]),
            cityLine.isEmpty ? nil : cityLine,
            field(address?["country"]), field(shipping["phone"]), field(shipping["email"]),
        ]
        let line = parts.compactMap { $0 }.joined(separator: ", ")
        return line.isEmpty ? "(empty)" : line
    }

    // MARK: parts

    /// Each item's label and its decimal amount: `UPS Ground    5.00 USD`. The total's label is
    /// the company name, which may be empty.
    static func summaryItems(_ items: [JSONValue], currency: String) -> String {
        CustomerRender.grid(
            items.map { item in
                let label = item["label"]?.stringValue ?? ""
                let decimal = item["decimal"]?.stringValue ?? money(item["amount"], "")
                return [
                    label.isEmpty ? "(total)" : label,
                    [decimal, currency.uppercased()].filter { !$0.isEmpty }.joined(separator: " "),
                ]
            })
    }

    /// One option a line, `* ` before the selected one: `* pm_2  Visa 4242`.
    static func options(_ context: JSONValue) -> String {
        let options = context["paymentOptions"]?.arrayValue ?? []
        let selected = context["selectedPaymentMethod"]?.stringValue
        var lines = CustomerRender.grid(
            options.map { option in
                let id = option["id"]?.stringValue
                return [(id != nil && id == selected ? "* " : "  ") + text(option["id"]), text(option["label"])]
            })
        if options.isEmpty { lines = context["loading"] == .bool(true) ? "none yet (loading)" : "none" }
        if let selected, !options.contains(where: { $0["id"]?.stringValue == selected }) {
            lines += "\nselected: \(selected)"
        }
        return lines
    }

    /// The shipping rows, when the context deals with shipping at all: an address, methods, an
    /// error about them, validation by the app, or required shipping fields.
    static func shipping(_ context: JSONValue) -> [(String, String)] {
        // JSONValue is ExpressibleByNilLiteral: `nil` as a JSONValue would be `.null`, not absent.
        func object(_ key: String) -> JSONValue? {
            guard let value = context[key], value.objectValue != nil else { return Optional<JSONValue>.none }
            return value
        }
        let address = object("shippingAddress")
        let methods = context["shippingMethods"]?.arrayValue
        let error = object("shippingError")
        let saveError = object("shippingSaveError")
        let required = !(context["configuration"]?["requiredShippingAddressFields"]?.arrayValue ?? []).isEmpty
        guard
            address != nil || methods != nil || error != nil || saveError != nil || required
                || context["validatesShipping"] == .bool(true)
        else { return [] }
        var rows: [(String, String)] = []
        if let address {
            let verify = context["shippingAddressNeedsVerification"] == .bool(true) ? " (needs verification)" : ""
            rows.append(("shipping", addressLine(address) + verify))
        } else {
            rows.append(("shipping", "none"))
        }
        if let methods {
            let currency = context["currency"]?.stringValue ?? ""
            let selected = context["selectedShippingMethod"]?.stringValue
            let lines = CustomerRender.grid(
                methods.map { method in
                    let id = method["identifier"]?.stringValue
                    var row = [
                        (id != nil && id == selected ? "* " : "  ") + text(method["identifier"]), text(method["label"]),
                        money(method["amount"], currency),
                    ]
                    if let detail = method["detail"]?.stringValue, !detail.isEmpty { row.append(detail) }
                    return row
                })
            rows.append(("shipping methods", methods.isEmpty ? "none" : lines))
        }
        if let error { rows.append(("shipping refused", SourceRender.errorLine(error))) }
        if let saveError { rows.append(("shipping not saved", SourceRender.errorLine(saveError))) }
        return rows
    }

    /// `2025-01-02 03:14:05, 9m 59s left`.
    static func deadline(_ value: JSONValue?, now: Date, timeZone: TimeZone) -> String {
        let time = CustomerRender.time(value, timeZone: timeZone)
        guard let date = Waiting.date(value?.stringValue) else { return time }
        return "\(time), \(Waiting.timeLeft(until: date, now: now))"
    }

    static func money(_ minor: JSONValue?, _ currency: String) -> String {
        guard let minor = minor?.intValue else { return "-" }
        return SourceRender.money(minor, currency: currency)
    }

    /// `Render.table` whose values may span lines, the following lines aligned under the first.
    static func table(_ rows: [(String, String)]) -> String {
        let width = rows.map(\.0.count).max() ?? 0
        let indent = String(repeating: " ", count: width + 2)
        return Render.table(
            rows.map { key, value in
                (key, value.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n" + indent))
            })
    }

    static func text(_ value: JSONValue?) -> String { CustomerRender.text(value) }
}

/// `--shipping-method ID:LABEL:AMOUNT` of `stpctl context answer`: a shipping method the app
/// offers for an address, its amount in minor units. The label may itself hold colons (the
/// identifier ends at the first, the amount starts after the last).
public struct ShippingMethodArgument: ExpressibleByArgument, Equatable, Sendable {
    public var identifier: String
    public var label: String
    public var amount: Int

    public init(identifier: String, label: String, amount: Int) {
        self.identifier = identifier
        self.label = label
        self.amount = amount
    }

    public init?(argument: String) {
        guard let first = argument.firstIndex(of: ":"), let last = argument.lastIndex(of: ":"), first < last else {
            return nil
        }
        let identifier = String(argument[..<first])
        let label = String(argument[argument.index(after: first)..<last])
        guard !identifier.isEmpty, !label.isEmpty, let amount = Int(argument[argument.index(after: last)...]),
            amount >= 0
        else { return nil }
        self.init(identifier: identifier, label: label, amount: amount)
    }
}

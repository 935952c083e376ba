import Foundation
import JSONRPC

/// How `stpctl customer ...` prints for people. Works on the JSON of the replies (a
/// `customer_session`, a Stripe customer, PaymentMethods), so it can be tested without a daemon.
public enum CustomerRender {
    public static let tableHeader = ["ID", "STATUS", "ADAPTER", "CUSTOMER", "LAST SELECTED", "UPDATED"]

    /// Sessions as an aligned table, one row per session under a header.
    public static func sessions(_ sessions: [JSONValue], timeZone: TimeZone = .current) -> String {
        guard !sessions.isEmpty else { return "no customer sessions" }
        let rows = sessions.map { session in
            [
                text(session["id"]), text(session["status"]), adapterKind(session["adapter"]),
                text(session["customerId"]), text(session["lastSelectedPaymentMethod"]),
                time(session["updatedAt"], timeZone: timeZone),
            ]
        }
        return grid([tableHeader] + rows)
    }

    /// `stripe/backend-keys`, `stripe/app-keys`, `stripe/server`, `backend` or `app`.
    public static func adapterKind(_ adapter: JSONValue?) -> String {
        guard let kind = adapter?["kind"]?.stringValue else { return "-" }
        guard kind == "stripe", let provider = adapter?["keyProvider"]?["kind"]?.stringValue else { return kind }
        return provider == "server" ? "stripe/server" : "stripe/\(provider)-keys"
    }

    /// One session, `key: value` lines.
    public static func session(_ session: JSONValue, timeZone: TimeZone = .current) -> String {
        var rows: [(String, String)] = [
            ("session", text(session["id"])),
            ("status", text(session["status"])),
            ("adapter", adapterDescription(session["adapter"])),
            ("customer", session["customerId"]?.stringValue ?? "not known yet"),
            ("last selected", session["lastSelectedPaymentMethod"]?.stringValue ?? "none"),
            (
                "customer fetched",
                session["customerFetchedAt"]?.stringValue.map { EventRender.localTime($0, timeZone: timeZone) }
                    ?? "not cached"
            ),
            (
                "methods fetched",
                session["paymentMethodsFetchedAt"]?.stringValue.map { EventRender.localTime($0, timeZone: timeZone) }
                    ?? "not cached"
            ),
        ]
        if let error = session["lastError"], error != .null {
            rows.append(("last error", lastError(error)))
        }
        rows.append(("created", time(session["createdAt"], timeZone: timeZone)))
        rows.append(("updated", time(session["updatedAt"], timeZone: timeZone)))
        return Render.table(rows)
    }

    /// The adapter in words, credentials only said to be set (the daemon shows them redacted).
    public static func adapterDescription(_ adapter: JSONValue?) -> String {
        guard let adapter, let kind = adapter["kind"]?.stringValue else { return "-" }
        var text: String
        switch kind {
        case "stripe":
            let provider = adapter["keyProvider"]
            switch provider?["kind"]?.stringValue {
            case "backend":
                text = "stripe, ephemeral keys from \(provider?["url"]?.stringValue ?? "?")"
                if provider?["authorization"] != nil, provider?["authorization"] != .null {
                    text += " (authorization set)"
                }
            case "app": text = "stripe, ephemeral keys from the app"
            case "server": text = "stripe, stpd's own key for \(provider?["customer"]?.stringValue ?? "?")"
            default: text = "stripe"
            }
        case "backend":
            text = "backend \(adapter["url"]?.stringValue ?? "?")"
            if adapter["authorization"] != nil, adapter["authorization"] != .null { text += " (authorization set)" }
        case "app": text = "app"
        default: text = kind
        }
        if adapter["includeApplePayPaymentMethods"] == .bool(true) { text += ", Apple Pay cards shown" }
        switch adapter["timeout"] {
        case .int(let seconds)?: text += ", timeout \(Render.seconds(Double(seconds)))"
        case .double(let seconds)?: text += ", timeout \(Render.seconds(seconds))"
        default: break
        }
        return text
    }

    /// `operation: message (code)` of a session's `lastError`.
    public static func lastError(_ error: JSONValue) -> String {
        let operation = error["operation"]?.stringValue
        let message = error["message"].map(Render.scalar) ?? "?"
        let code = error["code"].map(Render.scalar)
        return (operation.map { "\($0): " } ?? "") + message + (code.map { " (\($0))" } ?? "")
    }

    /// `pm_123 Visa 4242 12/30`: id, brand, last four digits and expiry of a card
    /// PaymentMethod (`(Apple Pay)` after a wallet card); another type as `pm_123 sepa_debit`.
    public static func paymentMethodLine(_ method: JSONValue) -> String {
        let id = method["id"]?.stringValue ?? "?"
        guard let card = method["card"], card.objectValue != nil else {
            return [id, method["type"]?.stringValue].compactMap { $0 }.joined(separator: " ")
        }
        var parts = [id]
        if let brand = card["brand"]?.stringValue { parts.append(brandName(brand)) }
        if let last4 = card["last4"]?.stringValue { parts.append(last4) }
        if let month = card["exp_month"]?.intValue, let year = card["exp_year"]?.intValue {
            parts.append(String(format: "%02d/%02d", Int(month), Int(year % 100)))
        }
        if let wallet = card["wallet"]?["type"]?.stringValue {
            parts.append(wallet == "apple_pay" ? "(Apple Pay)" : "(\(wallet))")
        }
        return parts.joined(separator: " ")
    }

    public static func paymentMethods(_ methods: [JSONValue]) -> String {
        methods.isEmpty ? "no payment methods" : methods.map(paymentMethodLine).joined(separator: "\n")
    }

    /// Stripe's card brand codes as the SDK shows them.
    public static func brandName(_ brand: String) -> String {
        switch brand.lowercased() {
        case "visa": "Visa"
        case "mastercard": "Mastercard"
        case "amex", "american express": "American Express"
        case "discover": "Discover"
        case "jcb": "JCB"
        case "diners", "diners club": "Diners Club"
        case "unionpay": "UnionPay"
        case "cartes_bancaires": "Cartes Bancaires"
        case "unknown": "Unknown"
        default: brand
        }
    }

    /// A Stripe customer: its id and the members people look at; absent ones left out.
    public static func customer(_ customer: JSONValue) -> String {
        var rows: [(String, String)] = [("customer", text(customer["id"]))]
        for (label, key) in [("name", "name"), ("email", "email"), ("phone", "phone"), ("description", "description")] {
            if let value = customer[key]?.stringValue, !value.isEmpty { rows.append((label, value)) }
        }
        if let shipping = customer["shipping"], shipping.objectValue != nil {
            rows.append(("shipping", shippingLine(shipping)))
        }
        if let method = customer["invoice_settings"]?["default_payment_method"]?.stringValue {
            rows.append(("default method", method))
        }
        if let source = customer["default_source"]?.stringValue { rows.append(("default source", source)) }
        return Render.table(rows)
    }

    /// `Jane Doe, 1 Main St, Springfield 12345, US`.
    public static func shippingLine(_ shipping: JSONValue) -> String {
        let address = shipping["address"]
        func field(_ value: JSONValue?) -> String? {
            guard let text = value?.stringValue, !text.isEmpty else { return nil }
            return text
        }
        let cityLine = [field(address?["city"]), field(address?["state"]), field(address?["postal_code"])]
            .compactMap { $0 }.joined(separator: " ")
        let parts = [
            field(shipping["name"]), field(address?["line1"]), field(address?["line2"]),
            cityLine.isEmpty ? nil : cityLine, field(address?["country"]),
        ]
        return parts.compactMap { $0 }.joined(separator: ", ")
    }

    static func text(_ value: JSONValue?) -> String {
        guard let value, value != .null else { return "-" }
        return Render.scalar(value)
    }

    static func time(_ value: JSONValue?, timeZone: TimeZone) -> String {
        value?.stringValue.map { EventRender.localTime($0, timeZone: timeZone) } ?? "-"
    }

    /// Columns separated by two spaces, each as wide as its widest cell; no trailing spaces.
    static func grid(_ rows: [[String]]) -> String {
        let count = rows.map(\.count).max() ?? 0
        let widths = (0..<count).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : Render.pad(cell, widths[column])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

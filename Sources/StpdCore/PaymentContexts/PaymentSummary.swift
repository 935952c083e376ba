/// One of the SDK's `paymentSummaryItems` (PKPaymentSummaryItem) as a payment context makes them:
/// its amount in minor units and as the decimal the SDK hands Apple Pay.
public struct PaymentSummaryItem: Sendable, Hashable {
    public var label: String
    /// Minor units.
    public var amount: Int
    /// The amount in the currency's major unit (zero-decimal currencies as they are), e.g. "10.99".
    public var decimal: String

    public init(label: String, amount: Int, decimal: String) {
        self.label = label
        self.amount = amount
        self.decimal = decimal
    }
}

/// What the SDK derives from a payment context's state: what it comes to, and whether it can pay.
extension PaymentContextRecord {
    /// The selected shipping method's amount (0: none).
    var shippingAmount: Int {
        shippingMethods?.first { $0.identifier == selectedShippingMethod }?.amount ?? 0
    }

    /// The SDK's `paymentAmount`: the amount (or the app's total) plus the selected shipping
    /// method's. The app may set no items at all, as in the SDK: then it is the shipping method's alone.
    public var paymentAmount: Int {
        (customSummaryItems.map { $0.last?.amount ?? 0 } ?? amount) + shippingAmount
    }

    /// The SDK's `paymentSummaryItems`: [shipping, total labelled companyName]; or the app's items
    /// with, when a method is selected, the shipping item before the total and the total grown by it.
    /// The app's empty list stays empty.
    public var paymentSummaryItems: [PaymentSummaryItem] {
        let item = { (label: String, amount: Int) in
            PaymentSummaryItem(
                label: label, amount: amount, decimal: CurrencyAmounts.decimal(amount, currency: currency))
        }
        let own = customSummaryItems ?? []
        if customSummaryItems?.isEmpty == true { return [] }
        let shipping = shippingMethods?.first { $0.identifier == selectedShippingMethod }
        return own.dropLast().map { item($0.label, $0.amount) } + (shipping.map { [item($0.label, $0.amount)] } ?? [])
            + [item(own.last?.label ?? companyName, paymentAmount)]
    }

    /// The SDK's `isReadyForPayment`: loaded without error, and an option selected.
    public var isReadyForPayment: Bool { !loading && loadError == nil && selected != nil }
}

/// Minor units as the SDK converts them: ×100 except the zero-decimal currencies.
enum CurrencyAmounts {
    static let zeroDecimal: Set<String> = [
        "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "vnd", "vuv", "xaf", "xof", "xpf",
    ]

    static func decimal(_ minor: Int, currency: String) -> String {
        if zeroDecimal.contains(currency.lowercased()) { return String(minor) }
        let sign = minor < 0 ? "-" : ""
        let value = abs(minor)
        let cents = value % 100
        return "\(sign)\(value / 100).\(cents < 10 ? "0" : "")\(cents)"
    }
}

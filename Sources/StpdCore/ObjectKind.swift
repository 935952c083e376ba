/// The kinds of durable object, as the store names them.
public enum ObjectKind: String, Sendable, Hashable, CaseIterable, Codable {
    case customerSession, customerPreference, appRequest, source, redirect, paymentIntent, setupIntent, paymentContext
    case debug

    /// How an error message names one ("no redirect session rdr_...").
    public var noun: String {
        switch self {
        case .customerSession: "customer session"
        case .customerPreference: "customer preference"
        case .appRequest: "app request"
        case .source: "source"
        case .redirect: "redirect session"
        case .paymentIntent: "PaymentIntent"
        case .setupIntent: "SetupIntent"
        case .paymentContext: "payment context"
        case .debug: "debug object"
        }
    }
}

/// A client secret is the capability for its PaymentIntent, SetupIntent or Source. Stripe checks it
/// on a publishable key's request only; under a secret or restricted key it answers whoever names
/// the id, so stpd compares the secret itself (`matches`) and refuses a wrong one with Stripe's own
/// answer for an id that does not exist (`StripeError.noSuchObject`).
public enum ClientSecret {
    /// The id a PaymentIntent's or SetupIntent's client secret belongs to (`pi_123_secret_abc`, also
    /// scoped: `pi_123_scoped_secret_abc`).
    public static func intentID(of clientSecret: String) -> String {
        for marker in ["_scoped_secret_", "_secret_"] {
            if let range = clientSecret.range(of: marker) { return String(clientSecret[..<range.lowerBound]) }
        }
        return clientSecret
    }

    /// Whether `given` is `actual`, in time that depends on their lengths only, not on where they
    /// first differ: a caller probing secrets learns nothing from how long the answer took.
    public static func matches(_ given: String, _ actual: String?) -> Bool {
        guard let actual else { return false }
        let a = Array(given.utf8)
        let b = Array(actual.utf8)
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0 && a.count == b.count
    }
}

/// The Stripe objects a client secret opens, as Stripe names them in its errors.
public enum SecretBearer: Sendable {
    case paymentIntent, setupIntent, source

    /// Stripe's `No such …` name and the `param` it blames (`setupintent` is Stripe's own spelling).
    var notFound: (name: String, param: String) {
        switch self {
        case .paymentIntent: ("payment_intent", "intent")
        case .setupIntent: ("setupintent", "intent")
        case .source: ("source", "id")
        }
    }
}

extension StripeError {
    /// Stripe's answer for an id that does not exist (404, `resource_missing`): also what a wrong
    /// client secret gets under a server key, and another user's object where stpd keeps one.
    public static func noSuchObject(_ object: SecretBearer, id: String, requestID: String? = nil) -> StripeError {
        let (name, param) = object.notFound
        return StripeError(
            kind: .invalidRequest, type: "invalid_request_error", code: "resource_missing", param: param,
            message: "No such \(name): '\(id)'", requestID: requestID, httpStatus: 404)
    }
}

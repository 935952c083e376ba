import Foundation
import JSONRPC

/// `POST /v1/payment_intents/{id}/verify_microdeposits` (or `/v1/setup_intents/{id}/...` for a
/// SetupIntent's client secret), as the SDK's `STPAPIClient.verifyPaymentIntentWithMicrodeposits`
/// and its SetupIntent and descriptor-code variants send it: either the two amounts (in cents) or the
/// descriptor code of the one 0.01 deposit, and the client secret with a publishable key only, as
/// for a confirmation. Answers the intent.
public struct VerifyMicrodepositsParams: Sendable, Hashable {
    public enum Proof: Sendable, Hashable {
        case amounts(Int, Int)
        /// Six characters starting with `SM`.
        case descriptorCode(String)
    }

    public var clientSecret: String
    public var proof: Proof

    public init(clientSecret: String, proof: Proof) {
        self.clientSecret = clientSecret
        self.proof = proof
    }

    /// `pi_XXX` or `seti_XXX` from the client secret (the whole secret when it has no `_secret_`).
    public var intentID: String { ClientSecret.intentID(of: clientSecret) }

    public var path: String {
        let collection = clientSecret.hasPrefix("seti_") ? "setup_intents" : "payment_intents"
        return "/v1/\(collection)/\(intentID)/verify_microdeposits"
    }

    public func formParams(for kind: StripeKey.Kind) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        if kind == .publishable { out["client_secret"] = .string(clientSecret) }
        switch proof {
        case .amounts(let first, let second): out["amounts"] = [.int(Int64(first)), .int(Int64(second))]
        case .descriptorCode(let code): out["descriptor_code"] = .string(code)
        }
        return out
    }

    /// The request to send with a key of `kind`; decode its answer as `PaymentIntent` or
    /// `SetupIntent` by `path`.
    public func request(for kind: StripeKey.Kind) -> StripeRequest {
        StripeRequest(.post, path, params: formParams(for: kind))
    }
}

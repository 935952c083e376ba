import Foundation
import JSONRPC

/// `POST /v1/payment_intents/{id}/verify_microdeposits` (or `/v1/setup_intents/{id}/...` for a
/// SetupIntent's client secret), as the SDK's `STPAPIClient.verifyPaymentIntentWithMicrodeposits`
/// and its SetupIntent and descriptor-code variants send it with a publishable key: the client
/// secret and either the two amounts (in cents) or the descriptor code of the one 0.01 deposit.
/// Answers the intent.
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
    public var intentID: String { StripeAPI.intentID(of: clientSecret) }

    public var path: String {
        let collection = clientSecret.hasPrefix("seti_") ? "setup_intents" : "payment_intents"
        return "/v1/\(collection)/\(intentID)/verify_microdeposits"
    }

    public func formParams() -> [String: JSONValue] {
        var out: [String: JSONValue] = ["client_secret": .string(clientSecret)]
        switch proof {
        case .amounts(let first, let second): out["amounts"] = [.int(Int64(first)), .int(Int64(second))]
        case .descriptorCode(let code): out["descriptor_code"] = .string(code)
        }
        return out
    }

    /// The request to send; decode its answer as `PaymentIntent` or `SetupIntent` by `path`.
    public var request: StripeRequest { StripeRequest(.post, path, params: formParams()) }
}

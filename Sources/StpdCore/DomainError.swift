import Foundation
import JSONRPC

/// Why the domain refused or failed an operation. It speaks of objects and inputs, not of the
/// wire: the daemon derives the contract's error (code, message, `data`) from it, and names an
/// input as the params do (`source.clientSecret`, `card.zip`) where the domain's name differs.
public enum DomainError: Error, Sendable, Hashable, Codable {
    /// The id names no object the caller may see; another uid's object answers the same way,
    /// so an id's existence is not revealed.
    case notFound(ObjectKind, id: String)
    /// A thing the operation names inside an object is not there (a payment option).
    case notInObject(ObjectKind, id: String, member: String, value: String, detail: String)
    /// The operation does not apply to the object's state (`state` names it).
    case invalidState(ObjectKind, id: String, state: String, detail: String)
    /// An input is missing or unusable; `input` is its name as the domain knows it.
    case invalidInput(input: String, detail: String)
    /// The configuration turns this off; `setting` names the switch.
    case disabled(setting: String, detail: String)
    /// No redirect is possible for the Source or PaymentIntent (the SDK would make no context).
    case redirectUnavailable(detail: String, data: [String: JSONValue])
    /// Opening a URL failed, or a WeChat Pay Source has no app to open.
    case redirectOpenFailed(detail: String, data: [String: JSONValue])
    /// The app reported that the customer closed the page it showed (the SDK's code 80).
    case redirectCancelled(detail: String?, data: [String: JSONValue])
    /// The app reported that the first load of a stripe.com page failed (the SDK's code 40).
    case redirectLoadFailed(detail: String?, data: [String: JSONValue])
    /// The pending action was answered, timed out or never existed.
    case pendingActionGone(action: String, detail: String)
    /// Carried in a payment context's state: nobody answered the pending action in time.
    case pendingActionTimedOut(action: String, kind: String, detail: String)
    /// The payment did not succeed: STPPaymentHandler's failure of an intent, or the app's answer.
    case paymentFailed(detail: String?, data: [String: JSONValue])
    /// Stripe asked for a next action stpd cannot carry (the SDK's unsupportedAuthentication).
    case nextActionUnsupported(type: String, kind: String, detail: String)
    /// The next action needs the confirmation's return URL, and there was none (missingReturnURL).
    case returnURLRequired(type: String, detail: String)
    /// A poll awaiting the customer reached its deadline with the intent still requiring action.
    case intentPollTimedOut(type: String, deadline: Date, status: String)
    /// A shipping address lacks what the configuration's `requiredShippingAddressFields` asks for:
    /// `fields` those it fails, `members` the address's members that are missing or not valid
    /// (`phone`, `address.postalCode`), as the SDK's form would not submit it.
    case shippingAddressIncomplete(fields: [String], members: [String])
    /// A per-user budget is spent (`what` of it, at most `limit`, raised by `setting`).
    case budgetExceeded(what: String, limit: Int, setting: String)
}

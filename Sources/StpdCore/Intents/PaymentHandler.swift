import JSONRPC
import StpdProtocol
import StripeAPI

/// The SDK's STPPaymentHandler for a PaymentIntent or a SetupIntent: confirm it, then handle the
/// next action Stripe asks for, by the action's type. The calls that confirm an intent
/// (`paymentIntent.confirm`, `setupIntent.confirm`, a payment context's managed PaymentIntent) all
/// come here, so a kind of next action is handled in one place for all of them.
public struct PaymentHandler: Sendable {
    let api: any PaymentsAPI
    let redirects: RedirectSessions

    public init(api: any PaymentsAPI, redirects: RedirectSessions) {
        self.api = api
        self.redirects = redirects
    }

    /// An intent as a confirmation left it, and what was done about its next action.
    public struct Confirmed<Intent: StripeIntent>: Sendable {
        public var intent: Intent
        public var nextAction: NextActionHandling
    }

    public func retrieve<Intent: StripeIntent>(_ type: Intent.Type, clientSecret: String) async throws -> Intent {
        try await Intent.retrieve(clientSecret: clientSecret, with: api)
    }

    /// Confirms the intent and handles its next action (`start`: start a redirect at once).
    public func confirm<Intent: StripeIntent>(
        _ type: Intent.Type, _ params: PaymentIntentConfirmParams, for caller: Caller, start: RedirectStartOptions?
    ) async throws -> Confirmed<Intent> {
        let intent = try await Intent.confirm(params, with: api)
        let handling = try await handleNextAction(
            of: intent, clientSecret: params.clientSecret, for: caller, start: start)
        return Confirmed(intent: intent, nextAction: handling)
    }

    /// What the intent's next action needs, by its kind (`NextAction.Kind`, STPPaymentHandler's
    /// classification): a `redirect_to_url` opens a redirect session for `caller`, started at once
    /// when `start` says how.
    public func handleNextAction<Intent: StripeIntent>(
        of intent: Intent, clientSecret: String, for caller: Caller, start: RedirectStartOptions?
    ) async throws -> NextActionHandling {
        guard intent.requiresAction, let action = intent.nextAction else { return .none }
        switch action.kind {
        case .redirect where intent.redirectURLs != nil:
            var session = try await redirects.create(
                for: caller, intent: intent, clientSecret: clientSecret, followUpTimeout: nil)
            if let start {
                session = try await redirects.start(id: session.id, for: caller, mode: start.mode, opener: start.opener)
            }
            return .redirect(session)
        default:
            return .none
        }
    }
}

/// What stpd did about an intent's next action.
public enum NextActionHandling: Sendable {
    /// Nothing: the intent asks for no action, or for one stpd leaves to the app.
    case none
    /// `redirect_to_url`: a redirect session the app (or stpd) opens.
    case redirect(RedirectSessionView)

    /// The redirect session opened for it, if any.
    public var redirect: RedirectSessionView? {
        if case .redirect(let session) = self { return session }
        return nil
    }
}

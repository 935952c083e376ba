import Foundation
import StpdCore
import StpdProtocol
import StripeAPI

// An intent stpd polls as the contract shows it, in replies and in the events `WireViews` gives
// the log; and a next action as stpd carries it.

extension IntentView {
    init<Intent: StripeIntent>(_ record: IntentRecord<Intent>, _ failures: any FailureRenderer = WireViews.failures) {
        self.init(
            id: record.id, object: Intent.kind == .paymentIntent ? "payment_intent_record" : "setup_intent_record",
            status: record.intent["status"]?.stringValue ?? "unknown",
            nextAction: record.decoded?.nextAction.map { NextActionView($0) },
            poll: record.poll.map { IntentPollView($0, failures) }, intent: record.intent,
            createdAt: record.createdAt.formatted(.iso8601), updatedAt: record.updatedAt.formatted(.iso8601))
    }

    /// A changed intent record as its event showed it (built once, when the change committed).
    init<Intent: StripeIntent>(_ shown: Shown<IntentRecord<Intent>>) {
        self = shown.view as? Self ?? Self(shown.record)
    }
}

extension IntentPollView {
    init<Intent: StripeIntent>(_ poll: IntentRecord<Intent>.Poll, _ failures: any FailureRenderer) {
        self.init(
            id: poll.id, status: poll.status, purpose: poll.purpose, nextActionType: poll.nextActionType,
            redirect: poll.redirect, startedAt: poll.startedAt.formatted(.iso8601),
            deadline: poll.deadline?.formatted(.iso8601), result: poll.result, error: poll.error.map(failures.render))
    }
}

extension NextActionView {
    /// `session`: the redirect session stpd opened for it.
    init(_ action: NextAction, session: String? = nil) {
        self.init(type: action.rawType, kind: action.kind.rawValue, details: action.details, session: session)
    }
}

extension IntentAnswer {
    /// What `confirm`, `handleNextAction` and `verifyMicrodeposits` answer: the intent as the
    /// payment handler left it, with the session it opened or the poll it started.
    init<Intent: StripeIntent>(_ handled: PaymentHandler.Handled<Intent>) where Intent.Naming == K {
        self.init(
            intent: handled.intent.clientFields, result: handled.result,
            error: handled.failure.map(WireViews.failures.render),
            nextAction: handled.intent.nextAction.map { NextActionView($0, session: handled.redirect?.id) },
            redirect: handled.redirect.map { RedirectSessionView($0) },
            poll: handled.poll.flatMap { IntentView($0).poll })
    }
}

import Foundation
import StpdCore
import StpdProtocol

// A redirect session as the contract shows it, in replies and in the events `WireViews` gives the
// log; and a redirect's wire params as the domain takes them (docs/architecture.md: the contract's
// types are mapped to the domain's and back here, at the edge).

extension RedirectSessionView {
    init(_ record: RedirectRecord, _ failures: any FailureRenderer = WireViews.failures) {
        self.init(
            id: record.id, status: record.status, kind: record.kind.rawValue, sourceId: record.sourceId,
            paymentIntentId: record.paymentIntentId, setupIntentId: record.setupIntentId,
            nativeURL: record.nativeURL, redirectURL: record.redirectURL, returnURL: record.returnURL,
            mode: record.mode, opener: record.opener, openURL: record.openURL,
            followUpTimeout: record.followUpTimeout,
            completion: record.completion.map {
                .init(trigger: $0.trigger, url: $0.url, error: $0.error.map(failures.render), at: $0.at)
            },
            outcome: record.outcome.map {
                .init(
                    result: $0.result, intentResult: $0.intentResult, error: $0.error.map(failures.render),
                    object: $0.object, at: $0.at)
            },
            createdAt: record.createdAt.formatted(.iso8601), updatedAt: record.updatedAt.formatted(.iso8601))
    }

    /// A changed session as its event showed it (built once, when the change committed).
    init(_ shown: Shown<RedirectRecord>) {
        self = shown.view as? Self ?? Self(shown.record)
    }
}

extension RedirectSessions.StartOptions {
    init(_ options: RedirectStartOptions) {
        self.init(mode: options.mode, opener: options.opener)
    }
}

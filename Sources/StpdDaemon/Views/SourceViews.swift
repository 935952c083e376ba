import Foundation
import StpdCore
import StpdProtocol
import StripeAPI

// A Source as the contract shows it, in replies and in the events `WireViews` gives the log.

extension SourceView {
    init(_ record: SourceRecord, _ failures: any FailureRenderer = WireViews.failures) {
        let model = record.decoded
        self.init(
            id: record.id, type: model?.type.rawValue ?? "unknown", flow: model?.flow.rawValue ?? "unknown",
            status: model?.status.rawValue ?? "unknown", usage: model?.usage.rawValue ?? "unknown",
            isReusable: model?.isReusable ?? true,
            redirect: model?.redirect.map {
                .init(status: $0.status.rawValue, url: $0.url.absoluteString, returnURL: $0.returnURL.absoluteString)
            },
            amount: model?.amount, currency: model?.currency, poll: record.poll.map { PollView($0, failures) },
            source: record.source,
            createdAt: record.createdAt.formatted(.iso8601), updatedAt: record.updatedAt.formatted(.iso8601))
    }

    /// A changed Source as its event showed it (built once, when the change committed).
    init(_ shown: Shown<SourceRecord>) {
        self = shown.view as? Self ?? Self(shown.record)
    }
}

extension PollView {
    init(_ poll: SourceRecord.Poll, _ failures: any FailureRenderer) {
        let deadline = poll.progress.startedAt.addingTimeInterval(poll.progress.timeout)
        let seen = poll.progress.latestSource.flatMap { try? Source(json: $0, codingPath: []) }?.status.rawValue
        self.init(
            status: poll.status, startedAt: poll.progress.startedAt.formatted(.iso8601),
            deadline: deadline.formatted(.iso8601), timeout: poll.progress.timeout,
            retryCount: poll.progress.retryCount,
            sourceStatus: poll.sourceStatus ?? seen, error: poll.error.map(failures.render), redirect: poll.redirect)
    }
}

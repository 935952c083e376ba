import Foundation
import JSONRPC
import StpdProtocol

/// What stpd stores of a redirect session: the view's fields plus the client secret it needs for
/// the follow-up, and its place in the registration order of return URLs.
struct RedirectRecord: Codable, Sendable {
    enum Status: String, Codable, Sendable { case notStarted, inProgress, completed, cancelled }
    enum Kind: String, Codable, Sendable { case source, paymentIntent }

    var id: String
    var owner: UInt32
    var status = Status.notStarted
    var kind: Kind
    var sourceId: String?
    var paymentIntentId: String?
    var clientSecret: String
    var isWeChat = false
    var nativeURL: String?
    var redirectURL: String?
    var returnURL: String?
    var mode: RedirectMode?
    var opener: RedirectOpener?
    var openURL: String?
    /// Registration order among started sessions: the earliest wins when several match a URL.
    var order: Int64?
    var followUpTimeout: Double
    var completion: RedirectSessionView.Completion?
    var outcome: RedirectSessionView.Outcome?
    var createdAt: Date
    var updatedAt: Date

    /// Whether app.foreground completes it (the SDK observes becoming active in these two variants).
    var completesOnForeground: Bool { status == .inProgress && mode != .inApp }

    /// Completed normally and the follow-up has not reported yet.
    var awaitsOutcome: Bool { status == .completed && outcome == nil && completion?.error == nil }

    var view: RedirectSessionView {
        RedirectSessionView(
            id: id, status: status.rawValue, kind: kind.rawValue, sourceId: sourceId, paymentIntentId: paymentIntentId,
            nativeURL: nativeURL, redirectURL: redirectURL, returnURL: returnURL, mode: mode, opener: opener,
            openURL: openURL, followUpTimeout: followUpTimeout, completion: completion, outcome: outcome,
            createdAt: createdAt.formatted(.iso8601), updatedAt: updatedAt.formatted(.iso8601))
    }

    func change(_ event: String) throws -> StateChange {
        let object = StoredObject(
            id: id, kind: RedirectSessions.kind, ownerUID: owner, state: try JSONCoding.value(of: self),
            createdAt: createdAt, updatedAt: updatedAt)
        return StateChange(object: object, eventType: event, publicState: try JSONCoding.value(of: view))
    }
}

import Foundation
import Synchronization

/// Issues loopback returns and hands each to the redirect session that Stripe's answer opens.
///
/// A call that says `returnURL: "loopback"` is resolved at its edge (`resolve`): stpd takes a port
/// from its listener, makes a token and confirms (or creates the Source) with the loopback URL.
/// The session is opened further down (`PaymentHandler`, which knows nothing of loopback) from the
/// return URL Stripe echoes; it `claim`s the issued return by that URL. An issued return that is
/// still unclaimed counts as waiting, so the listener stays open while the confirmation is on its
/// way; `resolve` forgets it when the call ends. A Source keeps its issued return in its record,
/// since its session is opened by a later call.
public final class LoopbackReturns: Sendable {
    let listener: any LoopbackListener
    /// This daemon's name (`STPD_INSTANCE`'s): sessions are filed as waiting on its listener.
    public let instance: String
    private let issued = Mutex<[String: LoopbackReturn]>([:])

    public init(listener: any LoopbackListener, instance: String) {
        self.listener = listener
        self.instance = instance
    }

    /// Runs `body` with `returnURL`, or with a newly issued loopback URL when it is `"loopback"`
    /// (then `body` gets the issued return too).
    public func resolve<T: Sendable>(
        _ returnURL: String?, appName: @autoclosure () -> String?,
        _ body: (_ returnURL: String?, _ issued: LoopbackReturn?) async throws -> T
    ) async throws -> T {
        guard returnURL == LoopbackReturn.request else { return try await body(returnURL, nil) }
        let ticket = try await issue(appName: appName())
        defer { forget(ticket) }
        return try await body(ticket.url, ticket)
    }

    public func issue(appName: String?) async throws -> LoopbackReturn {
        let ticket = LoopbackReturn(port: try await listener.openPort(), instance: instance, appName: appName)
        issued.withLock { $0[ticket.url] = ticket }
        return ticket
    }

    /// The issued return whose URL `returnURL` is (Stripe may have kept it as given), once.
    func claim(_ returnURL: String?) -> LoopbackReturn? {
        guard let returnURL, let token = LoopbackReturn.token(in: returnURL) else { return nil }
        return issued.withLock { issued in
            guard let key = issued.first(where: { $0.value.matches(token) })?.key else { return nil }
            return issued.removeValue(forKey: key)
        }
    }

    /// Puts back a return issued before (a payment context confirming again after a restart).
    func reissue(_ ticket: LoopbackReturn) { issued.withLock { $0[ticket.url] = ticket } }

    public func forget(_ ticket: LoopbackReturn) { _ = issued.withLock { $0.removeValue(forKey: ticket.url) } }

    /// Issued and not yet claimed by a session.
    public var unclaimed: Int { issued.withLock { $0.count } }
}

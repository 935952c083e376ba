import JSONRPC
import StpdCore
import StpdProtocol

/// `app.*`: the app's lifecycle, which the SDK observes (becoming active, going to the background).
enum AppHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, sources: SourceService, redirects: RedirectSessions,
        customers: CustomerSessions
    ) {
        router.register(AppForeground.self) { _, context in
            await customers.foreground(for: context.caller)
            // Polls first: a redirect completed here starts its own follow-up poll.
            let polls = try await sources.resumeAll(for: context.caller)
            return .init(completedRedirects: try await redirects.foreground(for: context.caller), polls: polls)
        }
        router.register(AppBackground.self) { _, context in
            .init(completedRedirects: [], polls: try await sources.pauseAll(for: context.caller))
        }
    }
}

import JSONRPC
import StpdCore
import StpdProtocol

/// `redirect.*` and `handle-url`, the URL callback that completes redirect sessions.
enum RedirectHandlers {
    static func register(into router: inout MethodRouter<CallContext>, redirects: RedirectSessions) {
        router.register(RedirectCreate.self) { params, context in
            let created =
                switch params.target {
                case .source(let source):
                    try await naming(inputsInside: "source") {
                        try await redirects.create(
                            for: context.caller, sourceID: source.id, clientSecret: source.clientSecret,
                            followUpTimeout: params.followUpTimeout)
                    }
                case .paymentIntent(let intent):
                    try await redirects.create(
                        for: context.caller, paymentIntentSecret: intent.clientSecret,
                        followUpTimeout: params.followUpTimeout)
                }
            return RedirectSessionView(created)
        }
        router.register(RedirectStart.self) { params, context in
            RedirectSessionView(
                try await redirects.start(
                    id: params.session, for: context.caller, mode: params.mode, opener: params.opener))
        }
        router.register(RedirectReport.self) { params, context in
            RedirectSessionView(
                try await redirects.report(
                    id: params.session, for: context.caller, outcome: params.outcome, url: params.url,
                    message: params.message))
        }
        router.registerReads(
            RedirectListing.self, get: { RedirectSessionView(try await redirects.get(id: $0, for: $1)) },
            list: {
                let (records, hasMore) = try await redirects.list(for: $0, status: $1, startingAfter: $2, limit: $3)
                return (records.map { RedirectSessionView($0) }, hasMore)
            })
        router.register(RedirectCancel.self) { params, context in
            RedirectSessionView(try await redirects.cancel(id: params.session, for: context.caller))
        }
        router.register(HandleURL.self) { params, context in
            let session = try await redirects.handleURL(params.url, for: context.caller)
            return .init(handled: session != nil, session: session)
        }
    }
}

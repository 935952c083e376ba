import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `source.*`, `redirect.*`, `handle-url`, `app.*`, `paymentIntent.*` and `setupIntent.*`.
enum SourceHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, sources: SourceService, redirects: RedirectSessions,
        customers: CustomerSessions, api: any PaymentsAPI, cards: CardValidator, merchantName: String?
    ) {
        router.register(SourceCreate.self) { params, context in
            try cards.require(params.params.card, at: "params.card")
            // As the SDK, whose companyName defaults to the app's bundle name: always a name.
            let name = params.merchantName ?? merchantName ?? context.caller.pid.flatMap { PeerProcessName.of(pid: $0) }
            let form = try params.params.sourceParams(at: "params").formParams(merchantName: name)
            let (view, secret) = try await sources.create(for: context.caller, params: form)
            return SourceResult(source: view, clientSecret: secret)
        }
        router.register(SourceRetrieve.self) { params, context in
            let (view, source) = try await sources.retrieve(
                id: params.id, clientSecret: params.clientSecret, for: context.caller)
            return SourceResult(source: view, clientSecret: source.clientSecret)
        }
        router.register(SourceGet.self) { params, context in try await sources.get(id: params.id, for: context.caller) }
        router.register(SourceList.self) { params, context in
            let (sources, hasMore) = try await sources.list(
                for: context.caller, status: params.status?.rawValue, startingAfter: params.startingAfter,
                limit: params.pageSize)
            return .init(sources: sources, hasMore: hasMore)
        }
        router.register(SourcePoll.self) { params, context in
            try await sources.startPoll(
                id: params.id, for: context.caller, clientSecret: params.clientSecret, timeout: params.timeout)
        }
        router.register(SourceStopPolling.self) { params, context in
            try await sources.stopPoll(id: params.id, for: context.caller)
        }

        router.register(RedirectCreate.self) { params, context in
            switch (params.source, params.paymentIntent) {
            case (let source?, nil):
                do {
                    return try await redirects.create(
                        for: context.caller, sourceID: source.id, clientSecret: source.clientSecret,
                        followUpTimeout: params.followUpTimeout)
                } catch let error as DomainError {
                    throw error.at("source.clientSecret")
                }
            case (nil, let intent?):
                return try await redirects.create(
                    for: context.caller, paymentIntentSecret: intent.clientSecret,
                    followUpTimeout: params.followUpTimeout)
            default:
                throw RPCError.invalidParams("give exactly one of source and paymentIntent", parameter: "source")
            }
        }
        router.register(RedirectStart.self) { params, context in
            try await redirects.start(
                id: params.session, for: context.caller, mode: params.mode, opener: params.opener)
        }
        router.register(RedirectReport.self) { params, context in
            try await redirects.report(
                id: params.session, for: context.caller, outcome: params.outcome, url: params.url,
                message: params.message)
        }
        router.register(RedirectGet.self) { params, context in
            try await redirects.get(id: params.session, for: context.caller)
        }
        router.register(RedirectList.self) { params, context in
            let (sessions, hasMore) = try await redirects.list(
                for: context.caller, status: params.status, startingAfter: params.startingAfter, limit: params.pageSize)
            return .init(sessions: sessions, hasMore: hasMore)
        }
        router.register(RedirectCancel.self) { params, context in
            try await redirects.cancel(id: params.session, for: context.caller)
        }
        router.register(HandleURL.self) { params, context in
            let session = try await redirects.handleURL(params.url, for: context.caller)
            return .init(handled: session != nil, session: session)
        }
        router.register(AppForeground.self) { _, context in
            await customers.foreground(for: context.caller)
            // Polls first: a redirect completed here starts its own follow-up poll.
            let polls = try await sources.resumeAll(for: context.caller)
            return .init(completedRedirects: try await redirects.foreground(for: context.caller), polls: polls)
        }
        router.register(AppBackground.self) { _, context in
            .init(completedRedirects: [], polls: try await sources.pauseAll(for: context.caller))
        }

        router.register(PaymentIntentRetrieve.self) { params, _ in
            let intent = try await api.retrievePaymentIntent(clientSecret: params.clientSecret)
            return .init(paymentIntent: intent.allResponseFields.withoutClientSecret)
        }
        router.register(PaymentIntentConfirm.self) { params, context in
            try cards.require(params.paymentMethod.card, at: "paymentMethod.card")
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod")
            let intent = try await api.confirmPaymentIntent(confirm)
            var session: RedirectSessionView?
            if intent.redirectURLs != nil {
                session = try await redirects.create(
                    for: context.caller, paymentIntent: intent, clientSecret: params.clientSecret, followUpTimeout: nil)
                if let start = params.start, let id = session?.id {
                    session = try await redirects.start(
                        id: id, for: context.caller, mode: start.mode, opener: start.opener)
                }
            }
            return .init(paymentIntent: intent.allResponseFields.withoutClientSecret, redirect: session)
        }

        router.register(SetupIntentRetrieve.self) { params, _ in
            let intent = try await api.retrieveSetupIntent(clientSecret: params.clientSecret)
            return .init(setupIntent: intent.allResponseFields.withoutClientSecret)
        }
        router.register(SetupIntentConfirm.self) { params, context in
            try cards.require(params.paymentMethod.card, at: "paymentMethod.card")
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod", setupIntent: true)
            let intent = try await api.confirmSetupIntent(confirm)
            var session: RedirectSessionView?
            if intent.redirectURLs != nil {
                session = try await redirects.create(
                    for: context.caller, setupIntent: intent, clientSecret: params.clientSecret, followUpTimeout: nil)
                if let start = params.start, let id = session?.id {
                    session = try await redirects.start(
                        id: id, for: context.caller, mode: start.mode, opener: start.opener)
                }
            }
            return .init(setupIntent: intent.allResponseFields.withoutClientSecret, redirect: session)
        }
    }
}

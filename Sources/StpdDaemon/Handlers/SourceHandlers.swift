import Foundation
import JSONRPC
import StpdCore
import StpdProtocol

/// `source.*`.
enum SourceHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, sources: SourceService, redirects: RedirectSessions,
        cards: CardValidator, merchantName: String?
    ) {
        router.register(SourceCreate.self) { params, context in
            try await cards.require(params.params.card, at: "params.card", for: context.caller)
            let name = MerchantName.resolve(
                given: params.merchantName, configured: merchantName, caller: context.caller)
            var constructed = try params.params.sourceParams(at: "params")
            let returnURL = constructed.redirect?["return_url"]?.stringValue
            try PaymentMethodInput.checkReturnURL(returnURL, parameter: "params.returnURL")
            guard returnURL == PaymentMethodInput.returnURLLoopback else {
                let (created, secret) = try await sources.create(
                    for: context.caller, params: constructed.formParams(merchantName: name))
                return SourceResult(source: SourceView(created), clientSecret: secret)
            }
            guard let loopback = redirects.loopback else {
                throw DomainError.disabled(setting: "loopback", detail: "this stpd serves no loopback return")
            }
            // The Source keeps its loopback return: its session is opened by a later redirect.create.
            let issued = try await loopback.issue(appName: name)
            defer { loopback.forget(issued) }
            constructed.redirect?["return_url"] = .string(issued.url)
            let (created, secret) = try await sources.create(
                for: context.caller, params: constructed.formParams(merchantName: name), loopback: issued)
            return SourceResult(source: SourceView(created), clientSecret: secret)
        }
        router.register(SourceRetrieve.self) { params, context in
            let (retrieved, source) = try await sources.retrieve(
                id: params.id, clientSecret: params.clientSecret, for: context.caller)
            return SourceResult(source: SourceView(retrieved), clientSecret: source.clientSecret)
        }
        router.registerReads(
            SourceListing.self, get: { SourceView(try await sources.get(id: $0, for: $1)) },
            list: {
                let (records, hasMore) = try await sources.list(
                    for: $0, status: $1?.rawValue, startingAfter: $2, limit: $3)
                return (records.map { SourceView($0) }, hasMore)
            })
        router.register(SourcePoll.self) { params, context in
            SourceView(
                try await sources.startPoll(
                    id: params.id, for: context.caller, clientSecret: params.clientSecret, timeout: params.timeout))
        }
        router.register(SourceStopPolling.self) { params, context in
            SourceView(try await sources.stopPoll(id: params.id, for: context.caller))
        }
    }
}

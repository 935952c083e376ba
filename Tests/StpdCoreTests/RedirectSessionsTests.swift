import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// Redirect sessions and their follow-up over a scripted Stripe, an in-memory store and a manual
/// clock: nothing sleeps; the follow-up's first poll goes out at once and Sources in these tests
/// are no longer pending by then.
struct RedirectSessionsTests {
    final class World: Sendable {
        let api = FakePaymentsAPI()
        let store = InMemoryStateStore()
        let clock = ManualClock()
        let log: EventLog
        let background = BackgroundWork()
        let sources: SourceService
        let intents: IntentPollers
        let redirects: RedirectSessions
        let work: LeasedWork
        let runner: Task<Void, Never>

        init(opener: (any URLOpener)? = nil, store: InMemoryStateStore? = nil) async throws {
            let store = store ?? self.store
            log = try await EventLog(store: store, views: DomainViews())
            work = LeasedWork(background: background)
            sources = SourceService(api: api, log: log, background: background, clock: clock, work: work)
            intents = IntentPollers(api: api, log: log, background: background, clock: clock, work: work)
            redirects = RedirectSessions(
                api: api, sources: sources, intents: intents, opener: opener, log: log, background: background,
                work: work)
            sources.follow(with: redirects)
            intents.follow(with: redirects)
            runner = Task { [background] in await background.run() }
        }

        deinit { runner.cancel() }

        /// A Source stpd knows (as after source.retrieve), owned by `owner`.
        func knownSource(_ id: String, owner: UInt32 = 1000) async throws {
            _ = try await sources.retrieve(id: id, clientSecret: "\(id)_secret", for: Caller(uid: owner))
        }

        func outcome(_ session: String) async throws -> RedirectOutcome {
            let found = try await log.wait(
                since: 0, filter: EventFilter(objectIds: [session], types: ["redirect.outcome"]), limit: 1,
                timeout: .seconds(10))
            let event = try #require(found.events.first)
            return try JSONCoding.typed(RedirectRecord.self, from: event.object).outcome!
        }
    }

    @Test func sourceSessionCompletesOnItsReturnURLAndReportsTheSourceStatus() async throws {
        let world = try await World()
        let id = world.api.addSource()
        try await world.knownSource(id)
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
        #expect(session.status == .notStarted)
        #expect(session.followUpTimeout == 10)
        let started = try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: nil, opener: nil)
        #expect(started.status == .inProgress)
        #expect(started.openURL == FakePaymentsAPI.hookURL(id))

        #expect(
            try await world.redirects.handleURL(
                "myshop://elsewhere?redirect_merchant_name=Shop", for: Caller(uid: 1000)) == nil)
        world.api.setSourceStatus(id, "chargeable")
        let url = "MYSHOP://Stripe-Redirect?source=\(id)&redirect_merchant_name=Shop&livemode=false"
        #expect(try await world.redirects.handleURL(url, for: Caller(uid: 1000)) == session.id)
        // Delivered twice (a desktop may run the handler twice): the session completed once.
        #expect(try await world.redirects.handleURL(url, for: Caller(uid: 1000)) == nil)

        let outcome = try await world.outcome(session.id)
        #expect(outcome.result == "chargeable")
        let done = try await world.redirects.get(id: session.id, for: Caller(uid: 1000))
        #expect(done.status == .completed)
        #expect(done.completion?.trigger == "url")
        #expect(try await world.sources.get(id: id, for: Caller(uid: 1000)).poll?.redirect == session.id)
    }

    @Test func cancelledSessionsNeverComplete() async throws {
        let world = try await World()
        let id = world.api.addSource()
        try await world.knownSource(id)
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
        // Cancel applies only in progress.
        #expect(try await world.redirects.cancel(id: session.id, for: Caller(uid: 1000)).status == .notStarted)
        _ = try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: .browser, opener: nil)
        #expect(try await world.redirects.cancel(id: session.id, for: Caller(uid: 1000)).status == .cancelled)
        #expect(
            try await world.redirects.handleURL(
                "myshop://stripe-redirect?redirect_merchant_name=Shop", for: Caller(uid: 1000))
                == nil)
        #expect(try await world.redirects.foreground(for: Caller(uid: 1000)).isEmpty)
        // Starting again is a no-op: a context is single-use.
        #expect(
            try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: nil, opener: nil).status
                == .cancelled)
    }

    /// STPRedirectContext: becoming active completes the external-browser flow and the automatic flow
    /// while a native app is open; automatic without a native URL runs the in-app browser flow, which
    /// (like inApp) completes on the return URL only.
    @Test func foregroundCompletesBrowserAndNativeAutomaticSessionsButNotInAppOrWebAutomatic() async throws {
        let world = try await World()
        var sessions: [String: String] = [:]
        let native: JSONValue = ["native_url": "alipays://platformapi/startapp?x=1"]
        for (name, mode, type, details) in [
            ("browser", RedirectMode.browser, "sofort", JSONValue.object([:])),
            ("inApp", .inApp, "sofort", [:]), ("webAutomatic", .automatic, "ideal", [:]),
            ("nativeAutomatic", .automatic, "alipay", native),
        ] {
            let id = world.api.addSource(type: type, status: "chargeable", details: details)
            try await world.knownSource(id)
            let session = try await world.redirects.create(
                for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
            _ = try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: mode, opener: nil)
            sessions[name] = session.id
        }
        let completed = try await world.redirects.foreground(for: Caller(uid: 1000))
        #expect(Set(completed) == [sessions["browser"]!, sessions["nativeAutomatic"]!])
        for name in ["inApp", "webAutomatic"] {
            let view = try await world.redirects.get(id: sessions[name]!, for: Caller(uid: 1000))
            #expect(view.status == .inProgress)
        }
        #expect(try await world.outcome(sessions["browser"]!).result == "chargeable")
    }

    @Test func theEarliestStartedMatchingSessionWinsAndOnlyTheCallersSessionsMatch() async throws {
        let world = try await World()
        var ids: [String] = []
        for owner: UInt32 in [1000, 1000, 2000] {
            let id = world.api.addSource()
            try await world.knownSource(id, owner: owner)
            ids.append(
                try await world.redirects.create(
                    for: Caller(uid: owner), sourceID: id, clientSecret: nil, followUpTimeout: nil
                ).id)
        }
        // Started in the order 2000's, second, first: creation order does not count.
        _ = try await world.redirects.start(id: ids[2], for: Caller(uid: 2000), mode: nil, opener: nil)
        _ = try await world.redirects.start(id: ids[1], for: Caller(uid: 1000), mode: nil, opener: nil)
        _ = try await world.redirects.start(id: ids[0], for: Caller(uid: 1000), mode: nil, opener: nil)
        let url = "myshop://stripe-redirect?redirect_merchant_name=Shop"
        #expect(try await world.redirects.handleURL(url, for: Caller(uid: 1000)) == ids[1])
        #expect(try await world.redirects.handleURL(url, for: Caller(uid: 1000)) == ids[0])
        #expect(try await world.redirects.handleURL(url, for: Caller(uid: 1000)) == nil)
        #expect(try await world.redirects.handleURL(url, for: .daemon) == ids[2])  // root sees everyone's
    }

    @Test func startedSessionsMatchAgainAfterARestart() async throws {
        let store = InMemoryStateStore()
        let id: String
        let session: String
        do {
            let before = try await World(store: store)
            id = before.api.addSource()
            try await before.knownSource(id)
            session = try await before.redirects.create(
                for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: 5
            ).id
            _ = try await before.redirects.start(id: session, for: Caller(uid: 1000), mode: nil, opener: nil)
        }
        let after = try await World(store: store)
        after.api.addSource(id: id, status: "consumed")
        try await after.work.adoptAll()
        #expect(
            try await after.redirects.handleURL(
                "myshop://stripe-redirect?redirect_merchant_name=Shop", for: Caller(uid: 1000))
                == session)
        #expect(try await after.outcome(session).result == "consumed")
        #expect(try await after.redirects.get(id: session, for: Caller(uid: 1000)).followUpTimeout == 5)
    }

    @Test func aSourceThatNeedsNoRedirectIsRefusedWithItsReason() async throws {
        let world = try await World()
        let card = world.api.addSource(type: "card", status: "chargeable", flow: "none")
        let consumed = world.api.addSource(status: "consumed")
        for (id, reason) in [(card, "flow"), (consumed, "status")] {
            try await world.knownSource(id)
            let error = await domainError {
                try await world.redirects.create(
                    for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
            }
            if case .redirectUnavailable(_, let data) = error {
                #expect(data["reason"] == .string(reason))
            } else {
                Issue.record("\(String(describing: error)) is not redirectUnavailable")
            }
        }
    }

    @Test func paymentIntentSessionsReportTheRetrievedStatus() async throws {
        let world = try await World()
        let secret = world.api.addIntent()
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), paymentIntentSecret: secret, followUpTimeout: nil)
        #expect(session.kind == .paymentIntent)
        #expect(session.returnURL == "myshop://done?order=42")
        _ = try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: .inApp, opener: nil)
        world.api.setIntentStatus(try #require(session.paymentIntentId), "succeeded")
        #expect(
            try await world.redirects.handleURL("myshop://done?order=42&payment_intent=x", for: Caller(uid: 1000))
                == session.id)
        #expect(try await world.outcome(session.id).result == "succeeded")

        let settled = world.api.addIntent(status: "succeeded")
        let error = await domainError {
            try await world.redirects.create(for: Caller(uid: 1000), paymentIntentSecret: settled, followUpTimeout: nil)
        }
        #expect(error?.name == "redirectUnavailable")
    }

    /// A SetupIntent's session completes as a PaymentIntent's does, then reports the retrieved
    /// SetupIntent's status; one with nothing to redirect opens no session.
    @Test func setupIntentSessionsReportTheRetrievedStatus() async throws {
        let world = try await World()
        let secret = world.api.addIntent(id: "seti_123", returnURL: "myshop://setup?order=7")
        let intent = try await world.api.retrieveSetupIntent(clientSecret: secret)
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), intent: intent, clientSecret: secret, followUpTimeout: nil)
        #expect(session.kind == .setupIntent)
        #expect(session.setupIntentId == "seti_123" && session.paymentIntentId == nil)
        _ = try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: .inApp, opener: nil)
        world.api.setIntentStatus("seti_123", "requires_payment_method")
        #expect(
            try await world.redirects.handleURL("myshop://setup?order=7&setup_intent=seti_123", for: Caller(uid: 1000))
                == session.id)
        let outcome = try await world.outcome(session.id)
        #expect(outcome.result == "requires_payment_method")
        #expect(outcome.object?["id"] == "seti_123" && outcome.object?["client_secret"] == nil)

        let settled = world.api.addIntent(id: "seti_456", status: "succeeded")
        let done = try await world.api.retrieveSetupIntent(clientSecret: settled)
        let error = await domainError {
            try await world.redirects.create(
                for: Caller(uid: 1000), intent: done, clientSecret: settled, followUpTimeout: nil)
        }
        #expect(error?.name == "redirectUnavailable")
    }

    /// Confirming either intent opens a session for a redirect_to_url next action, started at once
    /// when asked, and none when the intent asks for nothing.
    @Test func confirmingAnIntentFollowsItsRedirect() async throws {
        let world = try await World()
        let handler = PaymentHandler(api: world.api, redirects: world.redirects)
        let owner = Caller(uid: 1000)
        let pending = world.api.addIntent(id: "pi_red")
        let confirmed = try await handler.confirm(
            PaymentIntent.self, PaymentIntentConfirmParams(clientSecret: pending, paymentMethodID: "pm_1"), for: owner,
            start: RedirectSessions.StartOptions(mode: .inApp))
        let session = try #require(confirmed.redirect)
        #expect(confirmed.result == .pending && confirmed.intent.nextAction?.type == .redirectToURL)
        #expect(session.kind == .paymentIntent && session.paymentIntentId == "pi_red")
        #expect(session.status == .inProgress && session.mode == .inApp)

        let setup = world.api.addIntent(id: "seti_red")
        let unstarted = try await handler.confirm(
            SetupIntent.self, PaymentIntentConfirmParams(clientSecret: setup, paymentMethodID: "pm_1"), for: owner,
            start: nil)
        #expect(unstarted.redirect?.status == .notStarted)
        #expect(unstarted.redirect?.setupIntentId == "seti_red")

        let paid = world.api.addIntent(id: "pi_paid", status: "succeeded")
        let done = try await handler.confirm(
            PaymentIntent.self, PaymentIntentConfirmParams(clientSecret: paid, paymentMethodID: "pm_1"), for: owner,
            start: RedirectSessions.StartOptions())
        #expect(done.intent.status == .succeeded && done.redirect == nil && done.result == .succeeded)
    }

    @Test func theDaemonOpenerFallsBackFromANativeURLToTheWebPage() async throws {
        let opener = RecordingOpener(failing: ["alipays://"])
        let world = try await World(opener: opener)
        let id = world.api.addSource(type: "alipay", details: ["native_url": "alipays://platformapi/startapp?x=1"])
        try await world.knownSource(id)
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
        let started = try await world.redirects.start(
            id: session.id, for: Caller(uid: 1000), mode: .automatic, opener: .daemon)
        #expect(
            opener.opened.withLock { $0 } == [
                "alipays://platformapi/startapp?x=1", FakePaymentsAPI.hookURL(id),
            ])
        #expect(started.openURL == FakePaymentsAPI.hookURL(id))
        #expect(started.status == .inProgress)
    }

    @Test func aDaemonOpenerMustBeConfigured() async throws {
        let world = try await World()
        let id = world.api.addSource()
        try await world.knownSource(id)
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
        let error = await domainError {
            try await world.redirects.start(id: session.id, for: Caller(uid: 1000), mode: nil, opener: .daemon)
        }
        #expect(error?.name == "disabled")
        #expect(try await world.redirects.get(id: session.id, for: Caller(uid: 1000)).status == .notStarted)
    }

    @Test func weChatPayWhoseAppCannotBeOpenedCompletesWithStripeIOS23sAppRedirectError() async throws {
        let world = try await World(opener: RecordingOpener(failing: ["weixin://"]))
        let id = world.api.addSource(
            type: "wechat", flow: "none", details: ["ios_native_url": "weixin://app/wx123/pay/?prepay=1"])
        try await world.knownSource(id)
        let session = try await world.redirects.create(
            for: Caller(uid: 1000), sourceID: id, clientSecret: nil, followUpTimeout: nil)
        #expect(session.returnURL == "wx123://pay/")
        let started = try await world.redirects.start(
            id: session.id, for: Caller(uid: 1000), mode: .automatic, opener: .daemon)
        #expect(started.status == .completed)
        #expect(started.completion?.trigger == "error")
        #expect(failure(started.completion?.error)?.domainErrorName == "redirectOpenFailed")
    }

    @Test func aMalformedURLIsAnInvalidParameter() async throws {
        let world = try await World()
        let error = await domainError {
            try await world.redirects.handleURL("not a url", for: .daemon)
        }
        #expect(error?.name == "invalidInput")
    }
}

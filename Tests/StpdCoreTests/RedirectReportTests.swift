import Foundation
import JSONRPC
import StpdProtocol
import Testing

@testable import StpdCore

/// redirect.report: the events of the SDK's in-app Safari view and of its native-app open, which
/// only the app can see (spec §3.3, §3.4), and the URLs that make no context (§3.2).
struct RedirectReportTests {
    typealias World = RedirectSessionsTests.World
    let app = Caller(uid: 1000)

    private func started(
        _ world: World, type: String = "ideal", details: JSONValue = [:], mode: RedirectMode
    ) async throws -> Shown<RedirectRecord> {
        let id = world.api.addSource(type: type, details: details)
        try await world.knownSource(id)
        let session = try await world.redirects.create(for: app, sourceID: id, clientSecret: nil, followUpTimeout: nil)
        return try await world.redirects.start(id: session.id, for: app, mode: mode, opener: nil)
    }

    private func events(_ world: World, _ session: String) async throws -> [String] {
        let page = try await world.log.wait(
            since: 0, filter: EventFilter(objectIds: [session]), limit: 100, timeout: .zero)
        return page.events.map(\.type)
    }

    @Test func closingTheInAppBrowserCompletesWithStripeIOS20OnCancellationErrorCode80() async throws {
        let world = try await World()
        for mode in [RedirectMode.inApp, .automatic] {
            let session = try await started(world, mode: mode)
            let done = try await world.redirects.report(
                id: session.id, for: app, outcome: .closed, url: nil, message: "Done tapped")
            #expect(done.status == .completed)
            #expect(done.completion?.trigger == "closed")
            let error = try #require(failure(done.completion?.error))
            #expect(error.domainErrorName == "redirectCancelled")
            #expect(error.domainData["sdkDomain"] == "com.stripe.lib")
            #expect(error.domainData["sdkCode"] == 80)
            #expect(error.domainData["message"] == "Done tapped")
            #expect(done.outcome?.result == "error")
            #expect(failure(done.outcome?.error) == error)
            // Completion happens once: the return URL arriving afterwards matches nothing.
            #expect(try await world.redirects.handleURL(try #require(done.returnURL), for: app) == nil)
            #expect(try await events(world, session.id).filter { $0 == "redirect.completed" }.count == 1)
        }
    }

    @Test func closingIsNotAnEventOfTheExternalBrowserOrNativeFlows() async throws {
        let world = try await World()
        let browser = try await started(world, mode: .browser)
        let native = try await started(
            world, type: "alipay", details: ["native_url": "alipays://platformapi/startapp?x=1"], mode: .automatic)
        for session in [browser, native] {
            let error = await domainError {
                try await world.redirects.report(id: session.id, for: app, outcome: .closed, url: nil, message: nil)
            }
            #expect(error?.name == "invalidState")
        }
    }

    /// Stripe's hook page (hooks.stripe.com, the session's openURL) redirects at once to the bank's,
    /// so only the app's browser knows which page failed: a loadFailed report names it. A failure on
    /// the bank's page is ignored, as the SDK's Safari view delegate ignores it (its last known URL
    /// has moved to the bank's host); one on Stripe's completes with the SDK's code 40.
    @Test func aFailedFirstLoadCompletesWithCode40OnlyWhenThePageThatFailedIsStripes() async throws {
        let world = try await World()
        let session = try await started(world, mode: .inApp)
        #expect(session.openURL?.hasPrefix("https://hooks.stripe.com/redirect/authenticate/") == true)
        let unnamed = await domainError {
            try await world.redirects.report(id: session.id, for: app, outcome: .loadFailed, url: nil, message: nil)
        }
        if case .invalidInput(let input, _) = unnamed {
            #expect(input == "url")
        } else {
            Issue.record("\(String(describing: unnamed)) is not invalidInput")
        }
        let bank = try await world.redirects.report(
            id: session.id, for: app, outcome: .loadFailed, url: "https://secure.ing-bank.example/ideal/auth?trx=1",
            message: nil)
        #expect(bank.status == .inProgress)
        let failed = try await world.redirects.report(
            id: session.id, for: app, outcome: .loadFailed, url: session.openURL, message: "offline")
        #expect(failed.status == .completed)
        #expect(failed.completion?.trigger == "loadFailed")
        let error = try #require(failure(failed.completion?.error))
        #expect(error.domainErrorName == "redirectLoadFailed")
        #expect(error.domainData["sdkCode"] == 40)
    }

    /// A page stpd opened in the desktop's browser (`opener: daemon`) is the SDK's external-browser
    /// flow (`startSafariAppRedirectFlow`) whatever the mode: it completes on the app's next
    /// foreground, and the app, which sees no page, reports nothing about one.
    @Test func aPageTheDaemonOpenedCompletesOnForegroundAsTheExternalBrowserFlow() async throws {
        let opener = RecordingOpener()
        let world = try await World(opener: opener)
        for mode in [RedirectMode.inApp, .automatic] {
            let id = world.api.addSource(type: "ideal")
            try await world.knownSource(id)
            let created = try await world.redirects.create(
                for: app, sourceID: id, clientSecret: nil, followUpTimeout: nil)
            let session = try await world.redirects.start(id: created.id, for: app, mode: mode, opener: .daemon)
            #expect(opener.opened.withLock { $0.last } == session.openURL)
            let closed = await domainError {
                try await world.redirects.report(id: session.id, for: app, outcome: .closed, url: nil, message: nil)
            }
            #expect(closed?.name == "invalidState")
            #expect(try await world.redirects.foreground(for: app) == [session.id])
        }
    }

    @Test func aNativeURLThatCannotBeOpenedFallsBackToTheInAppWebFlow() async throws {
        let world = try await World()
        let session = try await started(
            world, type: "alipay", details: ["native_url": "alipays://platformapi/startapp?x=1"], mode: .automatic)
        #expect(session.openURL == "alipays://platformapi/startapp?x=1")
        let fallen = try await world.redirects.report(
            id: session.id, for: app, outcome: .nativeOpenFailed, url: nil, message: nil)
        #expect(fallen.status == .inProgress)
        #expect(fallen.openURL == fallen.redirectURL)
        #expect(try await events(world, session.id).contains("redirect.fallback"))
        // The in-app flow does not complete on becoming active, only on the return URL.
        #expect(try await world.redirects.foreground(for: app).isEmpty)
        #expect(try await world.redirects.handleURL(try #require(session.returnURL), for: app) == session.id)
    }

    @Test func weChatPayWhoseAppCannotBeOpenedCompletesWithAppRedirectErrorCode0() async throws {
        let world = try await World()
        let session = try await started(
            world, type: "wechat", details: ["ios_native_url": "weixin://app/wx123/pay/?prepay=1"], mode: .automatic)
        let done = try await world.redirects.report(
            id: session.id, for: app, outcome: .nativeOpenFailed, url: nil, message: nil)
        #expect(done.status == .completed)
        let error = try #require(failure(done.completion?.error))
        #expect(error.domainErrorName == "redirectOpenFailed")
        #expect(error.domainData["sdkDomain"] == "STPRedirectContextErrorDomain")
        #expect(error.domainData["sdkCode"] == 0)
        #expect(done.outcome?.result == "error")
    }

    @Test func aReportAfterTheSessionEndedChangesNothing() async throws {
        let world = try await World()
        let session = try await started(world, mode: .inApp)
        #expect(try await world.redirects.handleURL(try #require(session.returnURL), for: app) == session.id)
        let after = try await world.redirects.report(
            id: session.id, for: app, outcome: .closed, url: nil, message: nil)
        #expect(after.completion?.trigger == "url")
        #expect(after.completion?.error == nil)
    }

    /// The SDK makes no context when `redirect_to_url.url` or `return_url` does not parse; Swift 6's
    /// `URL(string:)` would percent-encode the spaces and accept them.
    @Test func aPaymentIntentWhoseRedirectURLsDoNotParseOpensNoSession() async throws {
        let world = try await World()
        for (url, returnURL) in [("not a valid URL", "myshop://done"), ("https://hooks.stripe.test/pi", "not a url")] {
            let secret = world.api.addIntent(returnURL: returnURL)
            let id = secret.components(separatedBy: "_secret_")[0]
            world.api.state.withLock { s in
                guard case .object(var intent)? = s.intents[id] else { return }
                intent["next_action"] = [
                    "type": "redirect_to_url",
                    "redirect_to_url": ["url": .string(url), "return_url": .string(returnURL)],
                ]
                s.intents[id] = .object(intent)
            }
            let error = await domainError {
                try await world.redirects.create(for: app, paymentIntentSecret: secret, followUpTimeout: nil)
            }
            #expect(error?.name == "redirectUnavailable")
        }
    }

    @Test func aSourceWhoseRedirectURLDoesNotParseOpensNoSession() async throws {
        let world = try await World()
        let id = world.api.addSource(returnURL: "not a url")
        try await world.knownSource(id)
        let error = await domainError {
            try await world.redirects.create(for: app, sourceID: id, clientSecret: nil, followUpTimeout: nil)
        }
        #expect(error?.name == "redirectUnavailable")
    }
}
